// SPDX-License-Identifier: MIT
import MoqCommandLine
import MoqSync
import SwiftMoQ

/// Options shared by every client command.
struct ClientFlags {
    static let options: Set<String> = [
        "url", "tls-fingerprint", "tls-root-file", "auth-token", "connect-timeout", "protocol",
    ]
    static let flags: Set<String> = ["tls-disable-verify", "verbose"]
    static let help = """
          --url URL                 relay URL, moql://host:port/path (required)
          --tls-fingerprint HEX     pin the relay's certificate by its SHA-256
          --tls-root-file FILE      trust the CA certificates in this PEM file
          --tls-disable-verify      do not verify the certificate (insecure)
          --auth-token TOKEN        sent as ?jwt=TOKEN
          --connect-timeout S       give up connecting after S seconds (default 10)
          --protocol P              offer auto (default: moq-lite first, then IETF MoQ
                                    Transport), moq-lite, ietf, ietf-16 or ietf-14
          --verbose                 log progress on stderr
        """

    let url: MoqURL
    let options: ClientOptions

    init(_ args: Arguments) throws(CommandError) {
        let text: String
        do { text = try args.required("url") } catch { throw .usage(error.description) }
        do { url = try MoqURL(text) } catch { throw .usage("--url: \(error.description)") }
        var options = ClientOptions()
        options.tls = TLSOptions(
            fingerprint: args.value("tls-fingerprint"), rootFile: args.value("tls-root-file"),
            disableVerify: args.has("tls-disable-verify"))
        options.authToken = args.value("auth-token")
        options.moqProtocol = try Self.moqProtocol(args)
        do { options.connectTimeout = try args.seconds("connect-timeout", default: .seconds(10)) } catch {
            throw .usage(error.description)
        }
        self.options = options
        Output.verbose = args.has("verbose")
        if options.tls.disableVerify {
            Output.error("warning: TLS certificate verification is disabled")
        }
    }

    /// `--protocol`'s value (``MoqProtocol/auto`` when absent).
    static func moqProtocol(_ args: Arguments) throws(CommandError) -> MoqProtocol {
        guard let name = args.value("protocol") else { return .auto }
        guard let choice = MoqProtocol(name: name) else {
            throw .usage(
                "--protocol: '\(name)' is none of \(MoqProtocol.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return choice
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

extension ClientFlags {
    /// Connects and follows GOAWAY: the first session, then each successor the relay hands
    /// over to (opened before the old one closes). A lost session is not retried: a one-shot
    /// command reports it and exits.
    func follow(role: SessionRole? = nil) async throws(CommandError) -> FollowedSessions {
        var o = options
        o.role = role
        Output.info("connecting to \(url.redacted)")
        let followed = FollowedSessions(url: url, options: o)
        guard let first = await followed.next() else {
            throw .runtime(followed.error?.description ?? "cannot connect to \(url.redacted)")
        }
        Output.info("connected (\(first.version))")
        return followed
    }
}

/// The sessions of one command: each is yielded once (the first, then GOAWAY successors).
final class FollowedSessions: @unchecked Sendable {
    private let connection: ReconnectingSession
    private var iterator: AsyncStream<MoqSession>.AsyncIterator
    private let failure = FailureBox()

    /// Where the fatal error lands (shared with the connection's handler).
    final class FailureBox: Sendable {
        let value = Lock<MoqError?>(nil)
    }

    init(url: MoqURL, options: ClientOptions) {
        let (stream, continuation) = AsyncStream<MoqSession>.makeStream()
        let failure = self.failure
        var handlers = ReconnectingSession.Handlers()
        handlers.session = { session, _ in continuation.yield(session) }
        handlers.status = { status in
            if status == .disconnected { continuation.finish() }  // .failed: fatalError finishes, with the error
        }
        handlers.goaway = { uri in
            Output.info("the relay asked us to go away\(uri.isEmpty ? "" : " to \(uri)"): reconnecting")
        }
        handlers.fatalError = { error in
            failure.value.withLock { $0 = error }
            continuation.finish()
        }
        connection = ReconnectingSession(url: url, options: options, handlers: handlers, retryAfterLoss: false)
        iterator = stream.makeAsyncIterator()
        connection.start()
    }

    /// The next session (the first, or the successor after GOAWAY); nil once they end.
    func next() async -> MoqSession? { await iterator.next() }

    /// The session in use now.
    var current: MoqSession? { connection.session }

    /// What ended them, if it was an error.
    var error: MoqError? { failure.value.withLock { $0 } }

    /// The successor of `session` if a GOAWAY handed over to one (it is then current).
    func successor(of session: MoqSession) -> MoqSession? {
        guard let now = current, now !== session else { return nil }
        return now
    }

    /// Closes the current session and stops following.
    func stop() { connection.stop() }
}

/// How a command failed: usage errors exit 2, runtime errors exit 1 (shared with moqbench).
typealias CommandError = CommandFailure
