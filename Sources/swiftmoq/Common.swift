// SPDX-License-Identifier: MIT
import SwiftMoQ

/// Options shared by every client command.
struct ClientFlags {
    static let options: Set<String> = ["url", "tls-fingerprint", "tls-root-file", "auth-token", "connect-timeout"]
    static let flags: Set<String> = ["tls-disable-verify", "verbose"]
    static let help = """
          --url URL                 relay URL, moql://host:port/path (required)
          --tls-fingerprint HEX     pin the relay's certificate by its SHA-256
          --tls-root-file FILE      trust the CA certificates in this PEM file
          --tls-disable-verify      do not verify the certificate (insecure)
          --auth-token TOKEN        sent as ?jwt=TOKEN
          --connect-timeout S       give up connecting after S seconds (default 10)
          --verbose                 log progress on stderr
        """

    let url: MoqURL
    let options: ClientOptions

    init(_ args: Arguments) throws(CommandError) {
        let text: String
        do { text = try args.required("url") } catch { throw .usage(error.description) }
        do { url = try MoqURL(text) } catch { throw .runtime(error.description) }
        var options = ClientOptions()
        options.tls = TLSOptions(
            fingerprint: args.value("tls-fingerprint"), rootFile: args.value("tls-root-file"),
            disableVerify: args.has("tls-disable-verify"))
        options.authToken = args.value("auth-token")
        do { options.connectTimeout = try args.seconds("connect-timeout", default: .seconds(10)) } catch {
            throw .usage(error.description)
        }
        self.options = options
        Output.verbose = args.has("verbose")
        if options.tls.disableVerify {
            Output.error("warning: TLS certificate verification is disabled")
        }
    }

    func connect(role: SessionRole? = nil) async throws(CommandError) -> MoqSession {
        var o = options
        o.role = role
        Output.info("connecting to \(url.redacted)")
        do {
            let session = try await MoqSession.connect(url, options: o)
            Output.info("connected (\(session.version))")
            return session
        } catch {
            throw .runtime(error.description)
        }
    }
}

/// How a command failed: usage errors exit 2, runtime errors exit 1.
enum CommandError: Error {
    case usage(String)
    case runtime(String)
}
