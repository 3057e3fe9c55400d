// SPDX-License-Identifier: MIT
import MoqCommandLine
import SwiftMoQ

/// The relay a role talks to: `--url` and `--tls-fingerprint` (pinned, as the tests do).
struct Client {
    static let options: Set<String> = ["url", "tls-fingerprint"]
    static let help = """
          --url URL                 relay URL, moql://127.0.0.1:PORT/ (required)
          --tls-fingerprint HEX     the relay certificate's SHA-256 (required)
        """

    let url: String
    let fingerprint: String

    init(_ options: Arguments) throws(BenchError) {
        url = try options.required("url")
        fingerprint = try options.required("tls-fingerprint")
    }

    /// A session to the relay in `role`.
    func connect(role: SessionRole) async throws(BenchError) -> MoqSession {
        var options = ClientOptions(tls: TLSOptions(fingerprint: fingerprint))
        options.role = role
        do { return try await MoqSession.connect(url, options: options) } catch {
            throw .runtime("connect \(url): \(error.description)")
        }
    }
}
