// SPDX-License-Identifier: MIT
import Foundation
import MoqQUIC
import MoqSync
import MoqTestKit
import MoqWebTransport
import MoqWire
import Testing

@testable import SwiftMoQ

/// A raw HTTP/3 client that writes what a test scripts, and records what the server answers.
final class RawH3Client: QUICConnectionDelegate, @unchecked Sendable {
    struct State {
        var connected = false
        var data: [Int64: [UInt8]] = [:]
        var fins: Set<Int64> = []
        var close: QUICCloseReason?
    }
    let state = Lock(State())
    let script: @Sendable (QUICConnection) -> Void
    /// Touched on the loop thread only.
    var connection: QUICConnection?

    init(script: @escaping @Sendable (QUICConnection) -> Void) { self.script = script }

    func quicConnectionDidConnect(_ connection: QUICConnection) {
        state.withLock { $0.connected = true }
        self.connection = connection
        script(connection)
    }
    func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool
    ) {
        state.withLock { s in
            s.data[stream, default: []] += Array(data.prefix(64 * 1024 - (s.data[stream]?.count ?? 0)))
            if fin { s.fins.insert(stream) }
        }
    }
    func quicConnection(_ connection: QUICConnection, didCloseWith reason: QUICCloseReason) {
        state.withLock { $0.close = reason }
        self.connection = nil
    }

    /// The status of the server's answer on the CONNECT stream (0), once complete.
    var status: Int? {
        var reader = HTTP3FrameReader()
        reader.append(state.withLock { $0.data[0] ?? [] })
        let frame: HTTP3Frame?? = try? reader.next()
        guard case .headers(let section)?? = frame, let fields = try? QPACK.decode(section) else { return nil }
        return fields.first { $0.name == ":status" }.flatMap { Int($0.value) }
    }

    /// Connects to `relay` with ALPN h3 on a loop of its own.
    static func run(_ relay: MoqRelay, loop: QUICEventLoop, script: @escaping @Sendable (QUICConnection) -> Void)
        -> RawH3Client
    {
        let client = RawH3Client(script: script)
        var quic = QUICSettings()
        quic.alpn = ["h3"]
        let settings = quic
        let tls = TLSClientConfiguration(verification: .fingerprints([Hex.decode(relay.fingerprint)!]))
        loop.execute {
            _ = QUICClient.connect(
                host: "127.0.0.1", port: relay.port, tls: tls, settings: settings, loop: loop, delegate: client)
        }
        return client
    }
}

/// Bytes of a control stream: its type, then `frames`.
func controlStream(_ frames: [[UInt8]]) -> [UInt8] {
    [UInt8(WebTransportWire.controlStreamType)] + frames.flatMap { $0 }
}

func headers(_ fields: [HTTPField]) -> [UInt8] { HTTP3Frame.headers(QPACK.encode(fields)).encoded() }

let goodRequest = WebTransportConnect.Request(authority: "localhost", path: "/anon", protocols: ["moq-lite-06"])

@Suite("Hostile HTTP/3 peers at the relay: clear errors, nothing else disturbed", .serialized, .timeLimit(.minutes(2)))
struct HostileWebTransportTests {
    @Test(
        "a CONNECT without :protocol gets 400; unknown frames and settings are skipped; a dynamic-table QPACK reference closes only that connection; a close capsule with a reason ends only that session"
    )
    func hostilePeers() async throws {
        let lines = Lock<[String]>([])
        var config = MoqRelay.Configuration(
            host: "127.0.0.1", port: 0, auth: RelayAuth(publicPrefixes: [""]),
            logger: MoqLogger(level: .info) { _, text in lines.withLock { $0.append(text) } })
        config.serveHTTP = false
        try await withRelay(try MoqRelay.start(config)) {
            (relay) async throws in
            let loop = try QUICEventLoop(name: "hostile-h3")
            defer { loop.shutdown() }
            // A well-behaved session that must not notice any of it.
            let publisher = try await WebTransportSessionTests.connect(relay)
            let subscriber = try await WebTransportSessionTests.connect(relay)

            // 1. Extended CONNECT without :protocol (a plain CONNECT): refused with 400.
            let plain = RawH3Client.run(relay, loop: loop) { c in
                let control = c.openStream(bidirectional: false)!
                c.write(control, Bytes(controlStream([HTTP3Frame.settings(.webTransport()).encoded()])))
                let stream = c.openStream(bidirectional: true)!
                c.write(
                    stream, Bytes(headers([HTTPField(":method", "CONNECT"), HTTPField(":authority", "localhost")])))
            }
            // 2. Unknown frame types (reserved 0x21 + 0x1f·N) and unknown settings around a valid CONNECT: 200.
            let unknown = RawH3Client.run(relay, loop: loop) { c in
                let control = c.openStream(bidirectional: false)!
                let settings = HTTP3Settings(
                    HTTP3Settings.webTransport().parameters + [(id: 0x1f * 7 + 0x21, value: 12345)])
                let reserved: [UInt8] = [0x40, 0x21 + 0x1f, 3, 1, 2, 3]
                c.write(control, Bytes(controlStream([HTTP3Frame.settings(settings).encoded(), reserved])))
                let stream = c.openStream(bidirectional: true)!
                c.write(stream, Bytes(reserved + headers(goodRequest.fields)))
            }
            // 3. A header section that refers to a dynamic table we said has capacity 0.
            let dynamic = RawH3Client.run(relay, loop: loop) { c in
                let control = c.openStream(bidirectional: false)!
                c.write(control, Bytes(controlStream([HTTP3Frame.settings(.webTransport()).encoded()])))
                let stream = c.openStream(bidirectional: true)!
                // Required Insert Count 1, then an indexed field line from the dynamic table.
                c.write(stream, Bytes(HTTP3Frame.headers([0x02, 0x00, 0x80]).encoded()))
            }
            try await eventually(
                "the three answers",
                detail: {
                    "\(String(describing: plain.status)) \(String(describing: unknown.status)) \(String(describing: dynamic.state.withLock { $0.close })) \(plain.state.withLock { $0 }) \(unknown.state.withLock { $0 })"
                }
            ) {
                plain.status == 400 && unknown.status == 200 && dynamic.state.withLock({ $0.close }) != nil
            }
            if case .application(let code, _, let byPeer)? = dynamic.state.withLock({ $0.close }) {
                #expect(code == HTTP3Error.qpackDecompressionFailed && byPeer)
            } else {
                Issue.record("unexpected close: \(String(describing: dynamic.state.withLock { $0.close }))")
            }

            // 4. A session closed with CLOSE_WEBTRANSPORT_SESSION and a reason: the relay ends it, says why.
            let closing = RawH3Client.run(relay, loop: loop) { c in
                let control = c.openStream(bidirectional: false)!
                c.write(control, Bytes(controlStream([HTTP3Frame.settings(.webTransport()).encoded()])))
                let stream = c.openStream(bidirectional: true)!
                c.write(stream, Bytes(headers(goodRequest.fields)))
            }
            try await eventually("the session to open", timeout: .seconds(30)) { closing.status == 200 }
            // moq-lite's SETUP on a WebTransport uni stream of session 0.
            let setup =
                WebTransportWire.uniStreamHeader(session: 0) + [UInt8(UniStreamType.setup.rawValue)] + Setup().encoded()
            await onLoop(loop) {
                guard let c = closing.connection, let stream = c.openStream(bidirectional: false) else { return }
                c.write(stream, Bytes(setup), fin: true)
            }
            try await eventually(
                "the relay to accept the session", detail: { "relay log: \(lines.withLock { $0.suffix(12) })" }
            ) {
                lines.withLock { $0.filter { $0.contains("WebTransport): connected") }.count == 3 }
            }
            let capsule = HTTP3Frame.data(WebTransportCapsule.close(code: 0x13, reason: "moving house").encoded())
                .encoded()
            try await sendOnLoop(loop, closing, capsule)
            try await eventually("the relay to report the close with its reason", timeout: .seconds(30)) {
                lines.withLock { $0.contains { $0.contains("moving house") } }
            }

            // The well-behaved session saw nothing of it.
            #expect(try await WebTransportSessionTests.roundTrip(publisher, subscriber, "calm") == ["a", "b", "c"])
            publisher.close()
            subscriber.close()
        }
    }
}

/// Writes `bytes` on the raw client's CONNECT stream (0), with FIN.
private func sendOnLoop(_ loop: QUICEventLoop, _ client: RawH3Client, _ bytes: [UInt8]) async throws {
    await onLoop(loop) { client.connection?.write(0, Bytes(bytes), fin: true) }
}

private func onLoop(_ loop: QUICEventLoop, _ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        loop.execute {
            body()
            done.resume()
        }
    }
}
