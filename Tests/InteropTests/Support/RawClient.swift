// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqQUIC
import MoqSync
import MoqTestKit
import MoqWire

/// A bare QUIC client speaking hand-written moq-lite bytes, to see exactly how the
/// Rust peer answers malformed input.
final class RawClient: QUICConnectionDelegate, @unchecked Sendable {
    struct Observed {
        var connected = false
        var data: [Int64: [UInt8]] = [:]
        var fins: Set<Int64> = []
        var resets: [Int64: UInt64] = [:]
        var stops: [Int64: UInt64] = [:]
        var closed: QUICCloseReason?
    }

    let observed = Lock(Observed())
    let loop: QUICEventLoop
    private var connection: QUICConnection?

    init(port: UInt16, fingerprint: String) throws {
        loop = try QUICEventLoop(name: "raw-client")
        let pin = Hex.decode(fingerprint)!
        let box = LoopBoxed(self)
        loop.execute {
            box.value.connection = QUICClient.connect(
                host: "127.0.0.1", port: port, tls: TLSClientConfiguration(verification: .fingerprints([pin])),
                settings: QUICSettings(), loop: box.value.loop, delegate: box.value)
        }
    }

    deinit { loop.shutdown() }

    /// Opens a stream, writes `bytes` (and FIN if asked); returns the stream id.
    /// - Throws: ``RustPeerError/peerFailed(message:context:)`` when the connection is gone or has
    ///   no stream credit (a failed test, not a crash of the whole test process).
    func open(bidirectional: Bool, _ bytes: [UInt8], fin: Bool = false) async throws -> Int64 {
        let box = LoopBoxed(self)
        let id: Int64? = await withCheckedContinuation { continuation in
            loop.execute {
                guard let c = box.value.connection, let id = c.openStream(bidirectional: bidirectional) else {
                    continuation.resume(returning: nil)
                    return
                }
                c.write(id, Bytes(bytes), fin: fin)
                continuation.resume(returning: id)
            }
        }
        guard let id else {
            throw RustPeerError.peerFailed(
                message: "raw client: cannot open a stream", context: "\(observed.withLock { $0 })")
        }
        return id
    }

    /// Waits until `condition` holds of what the client observed; the failure shows the last observation.
    func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: (Observed) -> Bool) async throws {
        try await eventually("raw client: \(what)", timeout: timeout, every: .milliseconds(5)) {
            observed.withLock { $0 }
        } until: {
            condition($0)
        }
    }

    func close() {
        let box = LoopBoxed(self)
        loop.execute { box.value.connection?.close(code: 0, reason: "") }
    }

    // MARK: QUICConnectionDelegate (loop thread)

    func quicConnectionDidConnect(_ connection: QUICConnection) { observed.withLock { $0.connected = true } }

    func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool
    ) {
        observed.withLock {
            $0.data[stream, default: []] += Array(data)
            if fin { $0.fins.insert(stream) }
        }
    }

    func quicConnection(_ connection: QUICConnection, didResetStream stream: Int64, code: UInt64) {
        observed.withLock { $0.resets[stream] = code }
    }

    func quicConnection(_ connection: QUICConnection, didStopSending stream: Int64, code: UInt64) {
        observed.withLock { $0.stops[stream] = code }
    }

    func quicConnection(_ connection: QUICConnection, didCloseWith reason: QUICCloseReason) {
        observed.withLock { $0.closed = reason }
    }
}

final class LoopBoxed<T: AnyObject>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
