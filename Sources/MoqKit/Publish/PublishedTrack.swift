// SPDX-License-Identifier: MIT
import MoqSync

/// A track of a ``Publisher`` (moq-kit's `PublishedTrack`).
public final class PublishedTrack: Sendable {
    /// What the track carries.
    public enum CodecInfo: Sendable, Equatable {
        /// Video: codec, size, frame rate.
        case video(codec: String, width: Int, height: Int, fps: Int)
        /// Audio: codec and sample rate.
        case audio(codec: String, sampleRate: Int)
        /// App data.
        case data
    }

    /// Where the track stands (moq-kit's `PublishedTrackState`).
    public enum State: Sendable, Equatable {
        /// Added, publisher not started.
        case idle
        /// Publisher started, no frame published yet.
        case starting
        /// Frames are being published.
        case active
        /// Ended.
        case stopped
    }

    /// The local label given to `add…Track`.
    public let name: String
    /// What it carries.
    public let codecInfo: CodecInfo
    /// State changes, starting with ``State/idle``.
    public let state: AsyncStream<State>
    let index: Int
    private weak let publisher: Publisher?
    private let continuation: AsyncStream<State>.Continuation
    private let current = Lock(State.idle)

    init(name: String, codecInfo: CodecInfo, index: Int, publisher: Publisher) {
        self.name = name
        self.codecInfo = codecInfo
        self.index = index
        self.publisher = publisher
        (state, continuation) = AsyncStream<State>.makeStream()
        continuation.yield(.idle)
    }

    /// The current state.
    public var currentState: State { current.withLock { $0 } }

    /// Ends this track only (the publisher and its other tracks go on).
    public func stop() {
        publisher?.stop(self)
    }

    func set(_ new: State) {
        let changed = current.withLock { s -> Bool in
            guard s != new, s != .stopped else { return false }
            s = new
            return true
        }
        guard changed else { return }
        continuation.yield(new)
        if new == .stopped { continuation.finish() }
    }
}
