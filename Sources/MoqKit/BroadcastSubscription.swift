// SPDX-License-Identifier: MIT
import MoqSession
import MoqSync
import SwiftMoQ

/// Broadcasts announced under a prefix (``Session/subscribe(prefix:)``), as moq-kit's.
///
/// Keep it while you want announcements; ``cancel()`` stops it and frees the prefix.
/// Across a reconnect, broadcasts announced again are yielded again.
public final class BroadcastSubscription: Sendable {
    /// The prefix (normalised: no leading or trailing `/`).
    public let prefix: String
    /// Broadcasts as they are announced; each ends (its ``Broadcast/catalogs()`` finish) when unannounced.
    public let broadcasts: AsyncStream<Broadcast>

    private let continuation: AsyncStream<Broadcast>.Continuation
    private let task = Lock<Task<Void, Never>?>(nil)
    private let finished = Lock(false)
    private weak let session: Session?

    init(prefix: String, session: Session, connection: ReconnectingSession?) {
        self.prefix = prefix
        self.session = session
        (broadcasts, continuation) = AsyncStream<Broadcast>.makeStream()
        let continuation = self.continuation
        let url = session.url
        let options = session.options
        let watch = Task { [prefix] in
            for await moq in await session.sessions() {
                var live: [String: Broadcast] = [:]
                for await event in moq.announced(prefix: prefix) {
                    switch event {
                    case .active(let path, _):
                        guard live[path] == nil, let relative = BroadcastPath.strip(prefix: prefix, from: path) else {
                            continue
                        }
                        let broadcast = Broadcast(
                            path: relative, absolutePath: path, session: moq, url: url, options: options,
                            connection: connection)
                        live[path] = broadcast
                        continuation.yield(broadcast)
                    case .ended(let path):
                        live.removeValue(forKey: path)?.end()
                    case .closed:
                        break
                    }
                }
                for broadcast in live.values { broadcast.end() }
            }
            continuation.finish()
        }
        task.withLock { $0 = watch }
        continuation.onTermination = { [weak self] _ in self?.cancel() }
    }

    /// True once cancelled or ended with the session.
    var isFinished: Bool { finished.withLock { $0 } }

    /// Stops watching announcements and frees the prefix for a new subscription.
    public func cancel() {
        guard
            !finished.withLock({ f in
                defer { f = true }; return f
            })
        else { return }
        task.withLock { $0 }?.cancel()
        continuation.finish()
        if let session { Task { await session.forget(self) } }
    }
}
