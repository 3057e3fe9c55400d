// SPDX-License-Identifier: MIT
public import MoqCatalog
import MoqSession
import MoqWire
public import SwiftMoQ
import Synchronization

/// Which broadcast to play.
public enum BroadcastTarget: Sendable, Equatable, CustomStringConvertible {
    /// Exactly this path (relative to the connection's root), as moq-dev's `moqsrc broadcast=`.
    case exact(String)
    /// The first broadcast announced under this prefix; when it ends, the next one (in
    /// announcement order), subscribed before the current one ends.
    case prefix(String)
    /// These broadcasts in this order (a play queue): the earliest announced one first; each
    /// next one is subscribed before the current one ends. One that ends before its turn is left out.
    case queue([String])

    /// The prefix to ask announcements for.
    var announcePrefix: String {
        switch self {
        case .exact(let p), .prefix(let p): BroadcastPath.normalize(p)
        case .queue: ""
        }
    }

    func matches(_ path: String) -> Bool {
        switch self {
        case .exact(let p): BroadcastPath.normalize(p) == path
        case .prefix(let p): BroadcastPath.hasPrefix(path, BroadcastPath.normalize(p))
        case .queue(let items): items.contains { BroadcastPath.normalize($0) == path }
        }
    }

    /// The path of an exact target (nil for the others).
    public var exactPath: String? {
        if case .exact(let p) = self { return BroadcastPath.normalize(p) }
        return nil
    }

    /// Whether the target moves on to another broadcast when the current one ends.
    var follows: Bool {
        if case .exact = self { return false }
        return true
    }

    /// Of the `active` broadcasts (in announcement order), the one to play after `current` (or
    /// first, when `current` is nil).
    func next(after current: String?, active: [String]) -> String? {
        switch self {
        case .exact: return current == nil ? active.first : nil
        case .prefix: return active.first { $0 != current }
        case .queue(let items):
            let order = items.map(BroadcastPath.normalize)
            let from = current.flatMap { order.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
            guard from < order.count else { return nil }
            return order[from...].first { active.contains($0) }
        }
    }

    /// A human-readable form for messages.
    public var description: String {
        switch self {
        case .exact(let p): "broadcast \"\(p)\""
        case .prefix(let p): "a broadcast under prefix \"\(p)\""
        case .queue(let items): "the queue \(items.joined(separator: ", "))"
        }
    }
}

/// What following a broadcast on one session produced.
public enum FollowEvent: Sendable, Equatable {
    /// The broadcast to play is `path` (the first found, or the next one under the prefix).
    case found(path: String)
    /// A complete catalog of `path`: each replaces the previous one.
    case catalog(path: String, HangCatalog)
    /// A catalog snapshot of `path` could not be decoded (the previous one still holds).
    case malformedCatalog(path: String, error: String)
    /// The catalog track of `path` failed (the broadcast may still be announced).
    case catalogFailed(path: String, error: String)
    /// `path` is no longer announced.
    case ended(path: String)
    /// `path` is to be played when the current broadcast ends: its catalogs follow (with its
    /// path), so that its tracks can be subscribed and prerolled before the switch.
    case upcoming(path: String)
    /// Nothing matching was announced within the timeout (following goes on).
    case notFound(BroadcastTarget)
}

/// Follows a broadcast on a session: waits for its announcement (or the first one
/// under a prefix), subscribes to its `catalog.json` and reports every catalog
/// snapshot, its end, and the next broadcast under the prefix. The stream finishes
/// when the session's announce stream closes; cancelling the iteration stops it.
public enum BroadcastFollower {
    /// Catalog snapshots are small; a larger one is refused as malformed.
    public static let maxCatalogBytes = 1 << 20

    /// Starts following `target` on `session`.
    /// - Parameter timeout: when nothing matches within it, ``FollowEvent/notFound(_:)`` is
    ///   reported once (nil: wait quietly).
    public static func follow(_ session: MoqSession, target: BroadcastTarget, timeout: Duration?)
        -> AsyncStream<FollowEvent>
    {
        // Bounded: a reader far behind loses the oldest events (catalog snapshots, each
        // replaced by the next), never the process's memory.
        let (stream, continuation) = AsyncStream<FollowEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let found = Flag()
        /// The broadcast followed by name was announced too (its catalog may still be on its way).
        let announced = Flag()
        let start: @Sendable (String) -> Task<Void, Never> = { path in
            found.set()
            continuation.yield(.found(path: path))
            return Task { await followCatalog(session, path: path) { continuation.yield($0) } }
        }
        let direct = session.isIETF ? target.exactPath : nil
        let announceTask = Task {
            var active: [String] = []  // in announcement order
            var known = Set<String>()
            var current: (path: String, task: Task<Void, Never>)?
            var upcoming: (path: String, task: Task<Void, Never>)?
            if let path = direct {
                // MoQ Transport relays may route a subscription without announcing what they route
                // (Cloudflare's): an exact broadcast's catalog is subscribed at once, and the broadcast
                // counts as found when its first catalog arrives. Its announcement, if one comes, is
                // this one (not a second follow); its withdrawal ends it as usual.
                known.insert(path)
                active.append(path)
                current = (
                    path,
                    Task {
                        await followDirectly(
                            session, path: path, found: found, announced: announced, into: continuation)
                    }
                )
            }
            /// Starts following the broadcast to play after the current one, once it is announced.
            func prepareNext() {
                guard target.follows, let playing = current,
                    let next = target.next(after: playing.path, active: active), next != upcoming?.path
                else { return }
                upcoming?.task.cancel()
                continuation.yield(.upcoming(path: next))
                upcoming = (next, Task { await followCatalog(session, path: next) { continuation.yield($0) } })
            }
            for await event in session.announced(prefix: target.announcePrefix) {
                switch event {
                case .active(let path, _):
                    if path == direct { announced.set() }
                    guard target.matches(path), known.insert(path).inserted else { continue }
                    active.append(path)
                    if current == nil, target.next(after: nil, active: active) == path {
                        current = (path, start(path))
                    }
                    prepareNext()
                case .ended(let path):
                    guard known.remove(path) != nil else { continue }
                    active.removeAll { $0 == path }
                    if let next = upcoming, next.path == path {
                        // Ended before its turn.
                        next.task.cancel()
                        upcoming = nil
                        continuation.yield(.ended(path: path))
                        prepareNext()
                        continue
                    }
                    guard let following = current, following.path == path else { continue }
                    following.task.cancel()
                    current = nil
                    continuation.yield(.ended(path: path))
                    guard target.follows else { continue }
                    if let next = upcoming {
                        // Its catalog is followed already.
                        upcoming = nil
                        found.set()
                        continuation.yield(.found(path: next.path))
                        current = next
                    } else if let next = target.next(after: path, active: active) {
                        current = (next, start(next))
                    }
                    prepareNext()
                case .closed:
                    break
                }
            }
            upcoming?.task.cancel()
            if let followed = current, followed.path == direct {
                // A relay that refuses to list namespaces still serves the broadcast followed by name.
                await withTaskCancellationHandler {
                    await followed.task.value
                } onCancel: {
                    followed.task.cancel()
                }
            }
            current?.task.cancel()
            continuation.finish()
        }
        let timeoutTask = timeout.map { limit in
            Task {
                try? await Task.sleep(for: limit)
                if !Task.isCancelled, !found.isSet, !announced.isSet { continuation.yield(.notFound(target)) }
            }
        }
        continuation.onTermination = { _ in
            announceTask.cancel()
            timeoutTask?.cancel()
        }
        return stream
    }

    /// Follows the catalog of `path` on `session` (a broadcast known to be announced): every
    /// snapshot, each malformed or oversized one, and each run of failures (after which it
    /// subscribes again every ``catalogRetryDelay``). The stream ends when the catalog track
    /// ends, the session closes, or the iteration is cancelled.
    public static func catalogs(_ session: MoqSession, path: String) -> AsyncStream<FollowEvent> {
        let (stream, continuation) = AsyncStream<FollowEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let task = Task {
            await followCatalog(session, path: BroadcastPath.normalize(path)) { continuation.yield($0) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// How long after a failed catalog subscription the next one is made, while the broadcast
    /// stays announced (a relay still announcing a publisher that has just reconnected resets the
    /// old session's subscriptions; the new publisher answers the next one).
    static let catalogRetryDelay: Duration = .milliseconds(500)

    /// Follows the catalog of `path`, known only by name (not announced): nothing is reported until
    /// its first catalog, which comes after ``FollowEvent/found(path:)``. Failures before it are quiet
    /// unless the broadcast was announced (the publisher may not be up yet; the subscription is made
    /// again, backing off from ``catalogRetryDelay`` to ``maxDirectRetryDelay``), so a broadcast that
    /// never comes is reported by the follow's timeout. When its catalog track ends, so does the
    /// broadcast (``FollowEvent/ended(path:)``): no announcement will say it.
    private static func followDirectly(
        _ session: MoqSession, path: String, found: Flag, announced: Flag,
        into continuation: AsyncStream<FollowEvent>.Continuation
    ) async {
        await followCatalog(session, path: path, backOff: { !found.isSet }) { event in
            if !found.isSet {
                switch event {
                case .catalog:
                    found.set()
                    continuation.yield(.found(path: path))
                case .catalogFailed where !announced.isSet: return
                default: break
                }
            }
            continuation.yield(event)
        }
        if !Task.isCancelled, found.isSet, session.closeReason == nil { continuation.yield(.ended(path: path)) }
    }

    /// The longest wait between subscriptions to a catalog followed by name that does not exist yet.
    static let maxDirectRetryDelay: Duration = .seconds(8)

    /// - Parameter backOff: while true, each failed subscription doubles the wait before the next
    ///   (up to ``maxDirectRetryDelay``); otherwise it is ``catalogRetryDelay``.
    private static func followCatalog(
        _ session: MoqSession, path: String, backOff: @Sendable () -> Bool = { false },
        report: @escaping @Sendable (FollowEvent) -> Void
    ) async {
        var delay = catalogRetryDelay
        var reported = false
        while !Task.isCancelled, session.closeReason == nil {
            guard let (reason, gotCatalog) = await followCatalogOnce(session, path: path, report: report) else {
                return
            }
            if Task.isCancelled { return }
            // One report per run of failures; a catalog in between starts a new run.
            if gotCatalog { reported = false }
            if !reported {
                reported = true
                report(.catalogFailed(path: path, error: reason))
            }
            delay = backOff() ? min(delay * 2, maxDirectRetryDelay) : catalogRetryDelay
            try? await Task.sleep(for: delay)
        }
    }

    /// One catalog subscription: nil when the track ended or the task was cancelled; otherwise why
    /// it failed and whether a catalog had arrived first.
    private static func followCatalogOnce(
        _ session: MoqSession, path: String, report: @Sendable (FollowEvent) -> Void
    ) async -> (reason: String, gotCatalog: Bool)? {
        // Each group is one complete snapshot: only the newest matters.
        let remote = session.subscribe(
            broadcast: path, track: HangCatalog.trackName, range: SubscriptionRange(priority: 255, maxLatencyMs: 0))
        let consumer = remote.consumer(maxLatencyMs: 0)
        defer { remote.cancel() }
        var gotCatalog = false
        do {
            while let group = try await withTaskCancellationHandler(
                operation: { try await consumer.nextGroup() }, onCancel: { consumer.cancel() })
            {
                guard let frame = try await group.nextFrame() else { continue }
                if Task.isCancelled { return nil }
                guard frame.payload.count <= maxCatalogBytes else {
                    report(.malformedCatalog(path: path, error: "catalog of \(frame.payload.count) bytes is too large"))
                    continue
                }
                do {
                    let catalog = try frame.payload.withUnsafeBytes { bytes throws(CatalogError) in
                        try HangCatalog(json: bytes)
                    }
                    gotCatalog = true
                    report(.catalog(path: path, catalog))
                } catch {
                    report(.malformedCatalog(path: path, error: error.description))
                }
            }
            return nil
        } catch {
            if Task.isCancelled { return nil }
            return (remote.error?.description ?? "\(error)", gotCatalog)
        }
    }
}

/// A one-way flag shared by tasks.
private final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
