// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import MoqKit
import MoqSync
import MoqTestKit
import SwiftMoQ

/// The matrix's data track: sequence numbers that moqsink publishes as the track `seq` (one every
/// 20 ms, from an appsrc), read through the player's leg by MoqKit's `Session.subscribeTrack`
/// (which resubscribes across reconnects) or by moq-dev's own subscriber (one session: it ends
/// with its connection).
final class DataTrackProbe: Sendable {
    /// Who reads the track.
    enum Reader: String, Sendable, Codable {
        case swift
        case rust
    }

    static let track = "seq"
    static let interval: Duration = .milliseconds(20)

    /// What the window delivered.
    struct Delivery: Sendable {
        /// Sequence numbers published in the window, and how many of them arrived.
        var sent: Int
        var delivered: Int
        /// Sequence numbers that arrived more than once (any time).
        var repeated: Int
    }

    private let sentAt = Lock<[UInt64]>([])
    private let received = Lock<[Int]>([])
    private let stopped = Lock(false)
    private let reader: Reader

    init(reader: Reader) { self.reader = reader }

    /// The appsrc branch to add to the publisher's launch line (its moqsink is `moq`, the pad `pad`).
    static func publisherBranch(pad: String) -> String {
        "appsrc name=data is-live=true do-timestamp=true format=time caps=application/x-moq-data ! moq.\(pad)"
    }

    /// Pushes a sequence number every ``interval`` until ``stop()``.
    func send(into source: AppSource) -> Task<Void, Never> {
        Task {
            var n = 0
            while !stopped.withLock({ $0 }) {
                guard (try? source.push(Sample(Array("\(n)".utf8)))) != nil else { return }
                sentAt.withLock { $0.append(LatencyProbe.now) }
                n += 1
                try? await Task.sleep(for: Self.interval)
            }
        }
    }

    /// Starts reading `broadcast` at `url`, pinned to `fingerprint`. The returned closure stops
    /// the reader and collects what it received.
    func read(url: String, fingerprint: String, broadcast: String) async throws -> @Sendable () async -> Void {
        switch reader {
        case .swift:
            let session = MoqKit.Session(
                url: url, options: SessionOptions(tls: TLSOptions(fingerprint: fingerprint)))
            try await session.connect()
            let subscription = try await session.subscribeTrack(broadcast: broadcast, name: Self.track)
            let received = self.received
            let task = Task {
                do {
                    for try await object in subscription.objects {
                        if let n = Int(String(decoding: object.payload, as: UTF8.self)) {
                            received.withLock { $0.append(n) }
                        }
                    }
                } catch {}
            }
            return {
                subscription.close()
                task.cancel()
                await session.close()
            }
        case .rust:
            let peer = try RustPeer.launch([
                "subscribe", "--url", url, "--fingerprint", fingerprint, "--broadcast", broadcast, "--track",
                Self.track, "--max-latency-ms", "10000", "--order", "arrival",
            ])
            let received = self.received
            return {
                _ = await peer.terminateAndWait()
                let numbers = peer.history.filter { $0.name == "frame" }.compactMap {
                    $0.bytes("payload").flatMap { Int(String(decoding: $0, as: UTF8.self)) }
                }
                received.withLock { $0 = numbers }
            }
        }
    }

    /// Stops sending.
    func stop() { stopped.withLock { $0 = true } }

    /// The sequence numbers sent between `from` and `to` (LatencyProbe clock ns) and what arrived.
    func delivery(from: UInt64, to: UInt64) -> Delivery {
        let times = sentAt.withLock { $0 }
        let window = Set(times.indices.filter { times[$0] >= from && times[$0] <= to })
        let all = received.withLock { $0 }
        let unique = Set(all)
        return Delivery(
            sent: window.count, delivered: window.intersection(unique).count, repeated: all.count - unique.count)
    }
}
