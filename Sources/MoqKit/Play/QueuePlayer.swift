// SPDX-License-Identifier: MIT
import MoqSession
import MoqSync

/// Plays broadcasts one after another without a gap, as AVQueuePlayer plays items: the first
/// from its catalog, then each queued broadcast path in order. The next one is subscribed and
/// prerolled while the current one plays, and its first frame starts where the current one's last
/// frame ends (moqsrc's `queue`), on the same pipeline and connection.
///
/// A queued broadcast that is not announced yet when its turn comes is skipped for the next
/// announced one; one announced later than its turn is not played. Tracks are chosen in each
/// broadcast's catalog as ``Player`` chooses them (the same names when they exist).
public final class QueuePlayer: Sendable {
    /// The player underneath: controls, events (``PlayerEvent/Name/queueAdvance`` when the queue
    /// moves on), stats.
    public let player: Player
    private struct State {
        var current: String
        var queued: [String]
    }
    private let state: Lock<State>

    /// A queue that plays `catalog`'s broadcast, then `items` (broadcast paths relative to the
    /// Session's root, as ``Broadcast/absolutePath``).
    /// - Throws: as ``Player/init(catalog:videoTrackName:audioTrackName:targetBuffering:output:mode:catchUp:)``.
    public init(
        first catalog: Catalog, then items: [String] = [], targetBuffering: Duration? = nil,
        output: PlayerOutput = .window, mode: PlaybackMode = .live
    ) throws(SessionError) {
        player = try Player(catalog: catalog, targetBuffering: targetBuffering, output: output, mode: mode)
        state = Lock(State(current: catalog.broadcast.absolutePath, queued: items))
        player.setQueue(items)
        let events = player.subscribeEvents()
        Task { [weak self] in
            for await event in events where event.name == .queueAdvance {
                guard let self, let path = event.fields["broadcast"]?.stringValue else { continue }
                self.advanced(to: path)
            }
        }
    }

    /// The broadcast playing (its path relative to the Session's root).
    public var currentItem: String { state.withLock { $0.current } }

    /// What plays after ``currentItem``, in order.
    public var items: [String] { state.withLock { $0.queued } }

    /// Queues `path` after the last item (while playing too: it is prerolled when its turn nears).
    public func append(_ path: String) {
        let items = state.withLock { s -> [String] in
            s.queued.append(path)
            return s.queued
        }
        player.setQueue(items)
    }

    /// Empties what is left of the queue: the current broadcast plays to its end.
    public func removeAllItems() {
        state.withLock { $0.queued = [] }
        player.setQueue([])
    }

    /// Starts (or resumes) playback; see ``Player/play()``.
    public func play() async throws(SessionError) { try await player.play() }

    /// Pauses; see ``Player/pause()``.
    public func pause() async { await player.pause() }

    /// Stops for good.
    public func stop() async { await player.stop() }

    /// Player events (each call is an independent stream).
    public func subscribeEvents() -> AsyncStream<PlayerEvent> { player.subscribeEvents() }

    /// The queue moved on (each pad reports it; the first report counts).
    private func advanced(to path: String) {
        state.withLock { s in
            guard s.current != path else { return }
            s.current = path
            if let index = s.queued.firstIndex(where: { BroadcastPath.normalize($0) == path }) {
                s.queued.removeFirst(index + 1)
            }
        }
    }
}
