// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import SwiftMoQ
import Testing

@Suite("Interop: TLS verification against the Rust relay", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct TLSInteropTests {
    @Test("a pinned fingerprint is accepted")
    func pinAccepted() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let session = try await relay.connect()
        #expect(session.version == "moq-lite-06")
        session.close()
    }

    @Test("a wrong fingerprint is refused, saying so")
    func wrongPinRefused() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let wrong = String(repeating: "0f", count: 32)
        await #expect {
            _ = try await MoqSession.connect(relay.url(), options: ClientOptions(tls: TLSOptions(fingerprint: wrong)))
        } throws: { error in
            guard let e = error as? MoqError, case .tls(let text) = e else { return false }
            return text.contains("fingerprint mismatch") && text.contains(relay.fingerprint)
        }
    }

    @Test("a self-signed certificate is refused by default")
    func selfSignedRefusedByDefault() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        await #expect {
            _ = try await MoqSession.connect(relay.url())
        } throws: { error in
            guard let e = error as? MoqError, case .tls(let text) = e else { return false }
            return text.contains("not trusted")
        }
    }

    @Test("verification can be disabled explicitly")
    func disabledVerification() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let session = try await MoqSession.connect(
            relay.url(), options: ClientOptions(tls: TLSOptions(disableVerify: true)))
        session.close()
    }

    @Test("contradictory TLS options are a configuration error")
    func contradictoryOptions() async throws {
        await #expect(throws: MoqError.self) {
            _ = try await MoqSession.connect(
                "moql://127.0.0.1:1/",
                options: ClientOptions(
                    tls: TLSOptions(fingerprint: String(repeating: "00", count: 32), disableVerify: true)))
        }
        await #expect(
            throws: MoqError.configuration(
                "tls-fingerprint must be the SHA-256 of the certificate: 64 hex digits (got 'xyz')")
        ) {
            _ = try await MoqSession.connect(
                "moql://127.0.0.1:1/", options: ClientOptions(tls: TLSOptions(fingerprint: "xyz")))
        }
    }
}
