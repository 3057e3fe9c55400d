// SPDX-License-Identifier: MIT
import CGStreamer

/// A buffer as Swift values: what ``AppSource`` and ``Harness`` push and what ``AppSink`` and ``Harness``
/// pull.
public struct Sample: Sendable, Equatable {
    /// The payload.
    public var bytes: [UInt8]
    /// Presentation time, when set.
    public var pts: Duration?
    /// Decoding time, when set.
    public var dts: Duration?
    /// Duration, when set.
    public var duration: Duration?
    /// Buffer flags.
    public var flags: BufferFlags
    /// The caps in force when pulled (nil when pushing: the source's caps apply).
    public var caps: String?
    /// The publisher's timestamp of the frame (moqsrc's `timestamp/x-moq-publisher` reference
    /// meta), when pulled from a buffer that has one: the frame's identity across the network.
    public var publisherTime: Duration?

    /// A sample.
    public init(
        _ bytes: [UInt8], pts: Duration? = nil, dts: Duration? = nil, duration: Duration? = nil,
        flags: BufferFlags = [], caps: String? = nil
    ) {
        self.bytes = bytes
        self.pts = pts
        self.dts = dts
        self.duration = duration
        self.flags = flags
        self.caps = caps
    }
}

extension Sample {
    /// Which frame of a constant-rate stream this is, by its publisher timestamp: the timestamp
    /// divided by `frameDuration`, rounded (nil without a publisher timestamp). Frames played
    /// are counted by it, so that the same frame arriving twice counts once.
    public func frameIndex(every frameDuration: Duration) -> Int? {
        publisherTime.map { Int(($0 / frameDuration).rounded()) }
    }
}

/// `GstBufferFlags`.
public struct BufferFlags: OptionSet, Sendable, Hashable {
    /// The raw `GST_BUFFER_FLAG_*` bits.
    public var rawValue: UInt32

    /// Flags from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Produced by a live source.
    public static let live = BufferFlags(rawValue: GST_BUFFER_FLAG_LIVE.rawValue)
    /// Follows a discontinuity.
    public static let discont = BufferFlags(rawValue: GST_BUFFER_FLAG_DISCONT.rawValue)
    /// May be corrupted.
    public static let corrupted = BufferFlags(rawValue: GST_BUFFER_FLAG_CORRUPTED.rawValue)
    /// Ends a media unit (RTP marker).
    public static let marker = BufferFlags(rawValue: GST_BUFFER_FLAG_MARKER.rawValue)
    /// Codec or stream header.
    public static let header = BufferFlags(rawValue: GST_BUFFER_FLAG_HEADER.rawValue)
    /// A gap: no data for this time.
    public static let gap = BufferFlags(rawValue: GST_BUFFER_FLAG_GAP.rawValue)
    /// May be dropped without harm.
    public static let droppable = BufferFlags(rawValue: GST_BUFFER_FLAG_DROPPABLE.rawValue)
    /// Not decodable on its own (not a keyframe).
    public static let deltaUnit = BufferFlags(rawValue: GST_BUFFER_FLAG_DELTA_UNIT.rawValue)
    /// Must not be dropped.
    public static let nonDroppable = BufferFlags(rawValue: GST_BUFFER_FLAG_NON_DROPPABLE.rawValue)

    /// The bits that are buffer flags (not mini-object flags).
    static let bufferBits: UInt32 = ~(GST_MINI_OBJECT_FLAG_LAST.rawValue - 1)
}
