// SPDX-License-Identifier: MIT
import MoqtWire
import SwiftMoQ

/// The protocol family a publish or subscribe role speaks (`--protocol`): moq-lite (the default)
/// or IETF MoQ Transport at draft 16 or 14, so that `make bench` sets the two side by side.
enum BenchProtocol: Sendable {
    case moqLite
    case ietf(MoqtVersion)

    static let help = """
          --protocol P              moq-lite (default), ietf-16 or ietf-14 (IETF MoQ Transport, raw QUIC)
        """

    init(_ text: String?) throws(BenchError) {
        switch text ?? "moq-lite" {
        case "moq-lite": self = .moqLite
        case "ietf-16": self = .ietf(.draft16)
        case "ietf-14": self = .ietf(.draft14)
        case let other: throw .usage("--protocol \(other): expected moq-lite, ietf-16 or ietf-14")
        }
    }
}

/// A session of either family, with what the publish and subscribe roles need of it.
enum BenchSession {
    case lite(MoqSession)
    case ietf(IETFSession)

    /// A subscription being read, and how to end it.
    struct Reading {
        let consumer: TrackConsumer
        let cancel: () -> Void
    }

    static func connect(_ client: Client, _ family: BenchProtocol, role: SessionRole) async throws(BenchError)
        -> BenchSession
    {
        switch family {
        case .moqLite: return .lite(try await client.connect(role: role))
        case .ietf(let version):
            do {
                return .ietf(
                    try await IETFSession.connect(
                        client.url, version: version,
                        options: ClientOptions(tls: TLSOptions(fingerprint: client.fingerprint))))
            } catch { throw .runtime("connect \(client.url) (\(version.alpn)): \(error.description)") }
        }
    }

    func publish(_ broadcast: BroadcastProducer) {
        switch self {
        case .lite(let session): session.publish(broadcast)
        case .ietf(let session): session.publish(broadcast)
        }
    }

    func waitForBroadcast(_ path: String, timeout: Duration) async throws(MoqError) {
        switch self {
        case .lite(let session): try await session.waitForBroadcast(path, timeout: timeout)
        case .ietf(let session): try await session.waitForBroadcast(path, timeout: timeout)
        }
    }

    /// Subscribes to `track` of `path` and reads it with `budgetMs` (moq-lite also asks the relay
    /// for that budget; IETF's SUBSCRIBE has none: only the reader skips).
    func read(_ path: String, track: String, budgetMs: UInt64) -> Reading {
        switch self {
        case .lite(let session):
            let remote = session.subscribe(
                broadcast: path, track: track, range: SubscriptionRange(priority: 128, maxLatencyMs: budgetMs))
            return Reading(consumer: remote.consumer(maxLatencyMs: budgetMs), cancel: remote.cancel)
        case .ietf(let session):
            // From group 0, read from group 0: the bench's track is new, and its publisher sends newer
            // groups first (as moq-lite's does), so the closed loop's first burst reaches the relay in
            // reverse and a reader that began at the first group to arrive skipped the 31 before it
            // (measured with `first_seq`). A live viewer would take the default (LargestObject).
            let remote = session.subscribe(
                broadcast: path, track: track, filter: .absoluteStart(Location(group: 0, object: 0)))
            return Reading(consumer: remote.consumer(maxLatencyMs: budgetMs, startAt: 0), cancel: remote.cancel)
        }
    }

    /// Lets what was written reach the peer, for at most `seconds`.
    func linger(_ seconds: Double) async {
        switch self {
        case .lite(let session): await session.drain(timeout: .milliseconds(Int64(seconds * 1000)))
        // IETFSession has no drain yet: the whole linger is waited.
        case .ietf: try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        }
    }

    /// Closes the session and waits until it has closed.
    func closeAndWait() async {
        switch self {
        case .lite(let session):
            session.close()
            _ = try? await session.closed()
        case .ietf(let session):
            session.close()
            _ = await session.closeReason
        }
    }

    func close() {
        switch self {
        case .lite(let session): session.close()
        case .ietf(let session): session.close()
        }
    }
}
