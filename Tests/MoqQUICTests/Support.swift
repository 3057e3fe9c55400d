// SPDX-License-Identifier: MIT
import MoqQUIC
// Test scaffolding: a recording delegate, condition waits (no sleeps as synchronisation), loop helpers.
import MoqSync
import MoqWire

/// Waits until a predicate over shared state becomes true. `signal()` re-checks every waiter.
final class Condition: Sendable {
    private struct Waiter {
        let predicate: @Sendable () -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }
    private let state = Lock<(next: Int, waiters: [Int: Waiter])>((0, [:]))

    func signal() {
        let ready = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            var out: [CheckedContinuation<Bool, Never>] = []
            for (id, w) in s.waiters where w.predicate() {
                out.append(w.continuation)
                s.waiters.removeValue(forKey: id)
            }
            return out
        }
        for c in ready { c.resume(returning: true) }
    }

    /// True when `predicate` held within `timeout` (a generous bound, not a timing assertion).
    func wait(_ timeout: Duration = .seconds(60), _ predicate: @escaping @Sendable () -> Bool) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id: Int? = state.withLock { s in
                if predicate() { return nil }
                let id = s.next
                s.next += 1
                s.waiters[id] = Waiter(predicate: predicate, continuation: continuation)
                return id
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                let timedOut = self.state.withLock { $0.waiters.removeValue(forKey: id) }
                timedOut?.continuation.resume(returning: false)
            }
        }
    }
}

/// Everything a delegate saw, guarded by a mutex; hooks run on the loop thread.
final class Recorder: QUICConnectionDelegate, @unchecked Sendable {
    struct State {
        var connected = false
        var opened: [Int64] = []
        var data: [Int64: [UInt8]] = [:]
        var bytes = 0
        var fins: [Int64] = []
        var resets: [Int64: UInt64] = [:]
        var stops: [Int64: UInt64] = [:]
        var closedStreams = 0
        var datagrams: [[UInt8]] = []
        var closes: [QUICCloseReason] = []
        var credit = 0
    }
    let state = Lock(State())
    let condition = Condition()
    /// Keep received bytes (off for large counts of streams).
    let keepData: Bool
    let onConnect: (@Sendable (QUICConnection) -> Void)?
    let onData: (@Sendable (QUICConnection, Int64, UnsafeRawBufferPointer, Bool) -> Void)?
    let onCredit: (@Sendable (QUICConnection, Bool) -> Void)?
    let onDatagram: (@Sendable (QUICConnection, UnsafeRawBufferPointer) -> Void)?

    init(
        keepData: Bool = true,
        onConnect: (@Sendable (QUICConnection) -> Void)? = nil,
        onData: (@Sendable (QUICConnection, Int64, UnsafeRawBufferPointer, Bool) -> Void)? = nil,
        onCredit: (@Sendable (QUICConnection, Bool) -> Void)? = nil,
        onDatagram: (@Sendable (QUICConnection, UnsafeRawBufferPointer) -> Void)? = nil
    ) {
        self.keepData = keepData
        self.onConnect = onConnect
        self.onData = onData
        self.onCredit = onCredit
        self.onDatagram = onDatagram
    }

    func wait(_ timeout: Duration = .seconds(60), _ predicate: @escaping @Sendable (State) -> Bool) async -> Bool {
        await condition.wait(timeout) { [self] in self.state.withLock { predicate($0) } }
    }

    var snapshot: State { state.withLock { $0 } }

    private func update(_ body: (inout State) -> Void) {
        state.withLock { body(&$0) }
        condition.signal()
    }

    func quicConnectionDidConnect(_ connection: QUICConnection) {
        update { $0.connected = true }
        onConnect?(connection)
    }
    func quicConnection(_ connection: QUICConnection, didOpenStream stream: Int64) {
        update { $0.opened.append(stream) }
    }
    func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool
    ) {
        update { s in
            if keepData { s.data[stream, default: []].append(contentsOf: data) }
            s.bytes += data.count
            if fin { s.fins.append(stream) }
        }
        onData?(connection, stream, data, fin)
    }
    func quicConnection(_ connection: QUICConnection, didResetStream stream: Int64, code: UInt64) {
        update { $0.resets[stream] = code }
    }
    func quicConnection(_ connection: QUICConnection, didStopSending stream: Int64, code: UInt64) {
        update { $0.stops[stream] = code }
    }
    func quicConnection(_ connection: QUICConnection, didCloseStream stream: Int64) {
        update { $0.closedStreams += 1 }
    }
    func quicConnection(_ connection: QUICConnection, didReceiveDatagram data: UnsafeRawBufferPointer) {
        update { $0.datagrams.append(Array(data)) }
        onDatagram?(connection, data)
    }
    func quicConnection(_ connection: QUICConnection, streamCreditAvailable bidirectional: Bool) {
        update { $0.credit += 1 }
        onCredit?(connection, bidirectional)
    }
    func quicConnection(_ connection: QUICConnection, didCloseWith reason: QUICCloseReason) {
        update { $0.closes.append(reason) }
    }
}

/// Runs `body` on the loop thread and returns its result.
func onLoop<T: Sendable>(_ loop: QUICEventLoop, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        loop.execute { continuation.resume(returning: body()) }
    }
}

/// A loop, a self-signed identity and a server on 127.0.0.1 with an ephemeral port.
struct Fixture {
    let loop: QUICEventLoop
    let identity: ServerIdentity
    let server: QUICServer
    let serverSide: Recorder

    init(
        settings: QUICSettings = QUICSettings(), names: [String] = ["localhost"], serverSide: Recorder = Recorder()
    ) throws {
        loop = try QUICEventLoop(name: "test-loop")
        identity = try ServerIdentity(.selfSigned(names: names))
        self.serverSide = serverSide
        server = try QUICServer.listen(
            host: "127.0.0.1", port: 0, identity: identity, settings: settings, loop: loop
        ) { [serverSide] _ in serverSide }
    }

    var pinned: TLSClientConfiguration {
        TLSClientConfiguration(verification: .fingerprints([Hex.decode(identity.fingerprint)!]))
    }

    func connect(
        _ client: Recorder, tls: TLSClientConfiguration? = nil, settings: QUICSettings = QUICSettings()
    ) -> QUICConnection {
        QUICClient.connect(
            host: "127.0.0.1", port: server.localPort, tls: tls ?? pinned, settings: settings, loop: loop,
            delegate: client)
    }

    func shutdown() { loop.shutdown() }
}

/// Deterministic pseudo-random bytes.
func pattern(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var x = seed &* 0x9e37_79b9_7f4a_7c15 | 1
    return (0..<count).map { _ in
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        return UInt8(truncatingIfNeeded: x)
    }
}
