// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqWire
import SwiftMoQ
import Testing

/// How moq-dev's Rust implementation answers malformed bytes, stream type by stream type,
/// checked against the reference (moq-lite-06.md §4.0, §4.8, §4.10). Our own handling of
/// the same input is covered by the session tests (MoqSessionTests).
@Suite(
    "Interop: malformed bytes close only what the reference says", .serialized, .timeLimit(.minutes(2)), .peersStopped)
struct MalformedInteropTests {
    /// Connects a raw client and exchanges SETUP.
    func setUp(_ relay: RustRelay) async throws -> RawClient {
        let raw = try RawClient(port: relay.port, fingerprint: relay.fingerprint)
        try await raw.waitUntil("connected") { $0.connected }
        _ = try await raw.open(bidirectional: false, [0x01] + Setup(origin: 4242).encoded(), fin: true)
        return raw
    }

    /// Proves the session is still alive: an ANNOUNCE_REQUEST is answered with ANNOUNCE_OK.
    func expectAlive(_ raw: RawClient) async throws {
        let s = try await raw.open(bidirectional: true, [0x01] + AnnounceRequest(prefix: "").encoded())
        try await raw.waitUntil("ANNOUNCE_OK") { ($0.data[s]?.count ?? 0) >= 2 }
        #expect(raw.observed.withLock { $0.closed } == nil)
    }

    @Test("an unknown bidi stream type is reset with CANCEL; the session survives")
    func unknownBidiType() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let raw = try await setUp(relay)
        let s = try await raw.open(bidirectional: true, [0x09, 0x00])
        try await raw.waitUntil("a reset") { $0.resets[s] != nil }
        #expect(raw.observed.withLock { $0.resets[s] } == StreamErrorCode.cancel.wireValue)
        try await expectAlive(raw)
        raw.close()
    }

    @Test("bytes written by a Probe opener get MALFORMED_TRACK; the session survives")
    func probeBytes() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let raw = try await setUp(relay)
        let s = try await raw.open(bidirectional: true, [0x04] + Probe(bitrate: 1, rttMs: 1).encoded())
        try await raw.waitUntil("a reset") { $0.resets[s] != nil }
        #expect(raw.observed.withLock { $0.resets[s] } == StreamErrorCode.malformedTrack.wireValue)
        try await expectAlive(raw)
        raw.close()
    }

    @Test("a malformed SUBSCRIBE closes only its stream")
    func malformedSubscribe() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let raw = try await setUp(relay)
        // size 2: id 0, then a path of length 1 with no byte inside the message.
        let s = try await raw.open(bidirectional: true, [0x02, 0x02, 0x00, 0x01])
        try await raw.waitUntil("the stream to end") { $0.resets[s] != nil || $0.stops[s] != nil || $0.closed != nil }
        let observed = raw.observed.withLock { $0 }
        #expect(observed.closed == nil, "the whole session closed: \(String(describing: observed.closed))")
        // moq-ffi 0.4.18 resets a SUBSCRIBE it cannot decode with CANCEL (measured here);
        // SwiftMoQ uses MALFORMED_TRACK, the reference's code for decode errors.
        #expect(
            observed.resets[s] == StreamErrorCode.cancel.wireValue
                || observed.resets[s] == StreamErrorCode.malformedTrack.wireValue)
        try await expectAlive(raw)
        raw.close()
    }

    @Test("an unknown uni stream type is ignored; the session survives")
    func unknownUniType() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let raw = try await setUp(relay)
        _ = try await raw.open(bidirectional: false, [0x2a, 1, 2, 3], fin: true)
        try await expectAlive(raw)
        raw.close()
    }

    @Test("a second SETUP closes the session with PROTOCOL_VIOLATION (0x3)")
    func secondSetup() async throws {
        let relay = try await RustRelay.start()
        defer { relay.stop() }
        let raw = try await setUp(relay)
        try await expectAlive(raw)
        _ = try await raw.open(bidirectional: false, [0x01] + Setup().encoded(), fin: true)
        try await raw.waitUntil("the close") { $0.closed != nil }
        guard case .application(let code, _, let byPeer)? = raw.observed.withLock({ $0.closed }) else {
            Issue.record(
                "expected an application close, got \(String(describing: raw.observed.withLock { $0.closed }))")
            return
        }
        #expect(code == SessionErrorCode.protocolViolation.rawValue)
        #expect(byPeer)
    }
}
