// SPDX-License-Identifier: MIT
public import MoqPipeline

/// A player event, named as moq-kit's `PlayerEventName` (identical strings).
public struct PlayerEvent: Sendable, Equatable, CustomStringConvertible {
    /// The event names moq-kit defines; those `moqsrc` posts are forwarded, the others the
    /// player emits itself.
    public enum Name: String, Sendable, CaseIterable {
        case playerInit = "player.init"
        case playerDestroy = "player.destroy"
        case playbackRequest = "playback.request"
        case playbackStart = "playback.start"
        case playbackPause = "playback.pause"
        case playbackResume = "playback.resume"
        /// A long-form seek within the buffer (``Player/seek(behindLiveEdge:)``); moqsrc's own
        /// `seek` message follows with where playback went.
        case playbackSeek = "playback.seek"
        /// Long-form: the publisher moved to another item and playback jumped to its start
        /// (fields `item`, `position-us`, `skipped-ms`).
        case timelineChange = "timeline.change"
        /// What is playing changed (``Player/nowPlaying``; fields `title`, `artist`, `album`,
        /// `duration-ms`, `json`).
        case nowPlaying = "now-playing"
        /// The audio moved to another output (``Player/switchAudioOutput(to:)``).
        case audioOutputChange = "audio.output.change"
        /// A queue (``QueuePlayer``, or moqsrc's prefix follow): the next broadcast's track is
        /// subscribed and its first frame arrived, before the current one ends (field `broadcast`).
        case queuePreroll = "queue.preroll"
        /// A queue moved on: this track now plays the next broadcast, starting where the previous
        /// one ended (fields `broadcast`, `from`, `prerolled`).
        case queueAdvance = "queue.advance"
        case playbackEnd = "playback.end"
        case trackSubscribeStart = "track.subscribe.start"
        case trackReady = "track.ready"
        case trackPlaying = "track.playing"
        case trackSubscribeError = "track.subscribe.error"
        case trackSubscribeEnd = "track.subscribe.end"
        case trackSelect = "track.select"
        case trackSwitch = "track.switch"
        case trackStallStart = "track.stall.start"
        case trackStallEnd = "track.stall.end"
        case rebufferStart = "rebuffer.start"
        case rebufferEnd = "rebuffer.end"
        case decodeError = "decode.error"
    }

    /// Which event.
    public let name: Name
    /// `video` or `audio` for track events.
    public let kind: String?
    /// The track, for track events.
    public let trackName: String?
    /// The payload (moq-kit's event structs, as `moqsrc`'s message fields: `duration-ms`,
    /// `source-timestamp-us`, `reason`…).
    public let fields: [String: PipelineValue]

    /// `name kind track`.
    public var description: String {
        [name.rawValue, kind, trackName].compactMap { $0 }.joined(separator: " ")
    }

    init(_ name: Name, kind: String? = nil, trackName: String? = nil, fields: [String: PipelineValue] = [:]) {
        self.name = name
        self.kind = kind
        self.trackName = trackName
        self.fields = fields
    }

    /// The event a `moqsrc` element message carries, if it is one.
    init?(message structureName: String, fields: [String: PipelineValue]) {
        guard let name = Name(rawValue: structureName) else { return nil }
        self.init(name, kind: fields["kind"]?.stringValue, trackName: fields["track"]?.stringValue, fields: fields)
    }
}
