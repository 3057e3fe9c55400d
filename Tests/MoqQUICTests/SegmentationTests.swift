// SPDX-License-Identifier: MIT
import Foundation
import MoqSync
import Testing

@testable import MoqQUIC

/// UDP sockets with segmentation offload: batches arrive as the datagrams they were made of,
/// and a batch the kernel refuses is sent datagram by datagram instead.
@Suite(.serialized)
struct SegmentationTests {
    /// Records the size of every datagram a socket hands over (after GRO splitting).
    final class Sizes: DatagramReceiver, @unchecked Sendable {
        let seen = Lock<[Int]>([])
        func receive(_ packet: UnsafeRawBufferPointer, from: SocketAddress) {
            seen.withLock { $0.append(packet.count) }
        }
        func socketError(_ code: Int32) {}
    }

    /// A receiving socket and a sender connected to it, both on `loop`.
    final class Pair: @unchecked Sendable {
        let receiver: UDPSocket
        let sender: UDPSocket
        let sizes = Sizes()

        init(_ loop: QUICEventLoop) throws {
            let any = try SocketAddress.resolve(host: "127.0.0.1", port: 0)[0]
            receiver = try UDPSocket(loop: loop, bind: any, connect: nil)
            sender = try UDPSocket(loop: loop, bind: nil, connect: receiver.local)
            receiver.receiver = sizes
        }

        /// Starts both sockets and sends `count` datagrams of `size` bytes as one batch.
        func send(count: Int, size: Int) throws(QUICError) -> (SendOutcome, offloadAfter: Bool) {
            try receiver.start()
            try sender.start()
            let bytes = [UInt8](repeating: 7, count: count * size)
            let outcome = bytes.withUnsafeBytes { sender.send($0, to: nil, length: 0, segment: size) }
            return (outcome, sender.segmentationOffload)
        }
    }

    private func run(count: Int, size: Int) async throws -> (sent: Bool, offloadAfter: Bool, sizes: [Int]) {
        let loop = try QUICEventLoop(name: "segmentation")
        defer { loop.shutdown() }
        let pair = try Pair(loop)
        let result = await onLoop(loop) { () -> Result<(Bool, Bool), QUICError> in
            do throws(QUICError) {
                let (outcome, offload) = try pair.send(count: count, size: size)
                if case .sent = outcome { return .success((true, offload)) }
                return .success((false, offload))
            } catch {
                return .failure(error)
            }
        }
        let (sent, offload) = try result.get()
        let deadline = ContinuousClock.now + .seconds(10)
        while pair.sizes.seen.withLock({ $0.count }) < count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        await onLoop(loop) {
            pair.sender.close()
            pair.receiver.close()
        }
        return (sent, offload, pair.sizes.seen.withLock { $0 })
    }

    @Test("a batch of 10 datagrams leaves in one call and arrives as 10 datagrams of their size")
    func batchArrivesAsDatagrams() async throws {
        let (sent, offload, sizes) = try await run(count: 10, size: 1200)
        #expect(sent)
        #expect(offload)
        #expect(sizes == Array(repeating: 1200, count: 10))
    }

    @Test("a batch the kernel refuses (more segments than it allows) is sent datagram by datagram")
    func refusedBatchFallsBack() async throws {
        let (sent, offload, sizes) = try await run(count: 200, size: 100)
        #expect(sent)
        #expect(!offload, "the kernel took 200 segments in one call: the refusal path was not exercised")
        #expect(sizes == Array(repeating: 100, count: 200))
    }
}
