// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import MoqPipeline
import MoqSync
import MoqTestKit

/// A buffer seen by a test: its timestamps, flags, size and a hash of its bytes.
struct SeenBuffer: Sendable {
    var pts: UInt64?
    var flags: UInt32
    var size: Int
    var hash: UInt64
    /// The publisher's timestamp moqsrc attaches (`timestamp/x-moq-publisher` reference meta), ns.
    var publisherTime: UInt64? = nil
    /// The buffer's duration, when it has one (ns).
    var duration: UInt64? = nil
    /// The bytes of a small buffer (≤ 256: text, data), nil for larger ones.
    var bytes: [UInt8]? = nil

    var isDelta: Bool { flags & GST_BUFFER_FLAG_DELTA_UNIT.rawValue != 0 }
}

extension SeenBuffer {
    /// What a test keeps of a sample an appsink received (``SampleRecorder``).
    init(_ sample: Sample) {
        self.init(
            pts: sample.pts.map(nanoseconds), flags: sample.flags.rawValue, size: sample.bytes.count,
            hash: fnv(sample.bytes), publisherTime: sample.publisherTime.map(nanoseconds),
            duration: sample.duration.map(nanoseconds), bytes: sample.bytes.count <= 256 ? sample.bytes : nil)
    }
}

/// A duration in whole nanoseconds (buffer times are never negative).
private func nanoseconds(_ d: Duration) -> UInt64 {
    let (seconds, attoseconds) = d.components
    return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
}

/// FNV-1a over bytes, eight at a time (little-endian words, then the tail byte by byte), to match
/// the same payload on both sides of a relay. A byte-at-a-time loop over a generic sequence cost
/// about a microsecond a byte in the ThreadSanitizer build: hashing 2 s of decoded 720p video took
/// longer than the recipe test's 20 s wait (stop 43's CI).
func fnv(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    let words = bytes.count / 8
    for i in 0..<words {
        hash =
            (hash ^ UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)))
            &* 0x100_0000_01b3
    }
    for i in (words * 8)..<bytes.count { hash = (hash ^ UInt64(bytes[i])) &* 0x100_0000_01b3 }
    return hash
}

/// ``fnv(_:)-(UnsafeRawBufferPointer)`` of an array.
func fnv(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { fnv($0) } }

/// What a pad probe sees of a buffer (the same fields as an appsink's ``SeenBuffer/init(_:)``).
func seen(_ buffer: UnsafeMutablePointer<GstBuffer>) -> SeenBuffer {
    var map = GstMapInfo()
    guard gst_buffer_map(buffer, &map, GST_MAP_READ) != 0 else {
        return SeenBuffer(pts: nil, flags: buffer.pointee.mini_object.flags, size: 0, hash: fnv([]))
    }
    defer { gst_buffer_unmap(buffer, &map) }
    let bytes = UnsafeBufferPointer(start: map.data, count: Int(map.size))
    let pts = swiftmoq_buffer_pts(buffer)
    let duration = swiftmoq_buffer_duration(buffer)
    let reference = gst_caps_new_empty_simple("timestamp/x-moq-publisher")
    defer { gst_caps_unref(reference) }
    let publisherTime = gst_buffer_get_reference_timestamp_meta(buffer, reference).map { UInt64($0.pointee.timestamp) }
    return SeenBuffer(
        pts: swiftmoq_clock_time_is_valid(pts) != 0 ? UInt64(pts) : nil, flags: buffer.pointee.mini_object.flags,
        size: bytes.count, hash: fnv(UnsafeRawBufferPointer(bytes)), publisherTime: publisherTime,
        duration: swiftmoq_clock_time_is_valid(duration) != 0 ? UInt64(duration) : nil,
        bytes: bytes.count <= 256 ? Array(bytes) : nil)
}

/// Records every sample of an appsink as a ``SeenBuffer`` (MoqTestKit's ``SampleRecorder``).
func record(_ sink: UnsafeMutablePointer<GstElement>) -> SampleRecorder<SeenBuffer> {
    SampleRecorder(AppSink(element: sink), keep: SeenBuffer.init)
}

extension TestPipeline {
    /// Records every sample of the appsink named `name` as a ``SeenBuffer``.
    func record(_ name: String) throws -> SampleRecorder<SeenBuffer> {
        SampleRecorder(try AppSink(base, name: name), keep: SeenBuffer.init)
    }
}

/// Records the buffers flowing through a pad (a probe), for matching against what a
/// subscriber received.
final class PadRecorder: @unchecked Sendable {
    private let buffers = Lock<[SeenBuffer]>([])
    private let pad: UnsafeMutablePointer<GstPad>
    private var probe: gulong = 0

    init(_ element: UnsafeMutablePointer<GstElement>, pad name: String = "src") {
        pad = gst_element_get_static_pad(element, name)!
        probe = gst_pad_add_probe(
            pad, GST_PAD_PROBE_TYPE_BUFFER,
            { _, info, data in
                let recorder = Unmanaged<PadRecorder>.fromOpaque(data!).takeUnretainedValue()
                if let buffer = info?.pointee.data {
                    var entry = seen(buffer.assumingMemoryBound(to: GstBuffer.self))
                    entry.pts = entry.pts.flatMap { recorder.runningTime($0) }
                    recorder.buffers.withLock { $0.append(entry) }
                }
                return GST_PAD_PROBE_OK
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    /// Recorded timestamps are running time (encoders may shift their segment, e.g. by 1000 h).
    var all: [SeenBuffer] { buffers.withLock { $0 } }

    fileprivate func runningTime(_ pts: UInt64) -> UInt64? {
        guard let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0) else { return nil }
        defer { gst_event_unref(event) }
        var segment: UnsafePointer<GstSegment>?
        gst_event_parse_segment(event, &segment)
        guard let segment else { return nil }
        let time = gst_segment_to_running_time(segment, GST_FORMAT_TIME, GstClockTime(pts))
        return swiftmoq_clock_time_is_valid(time) != 0 ? UInt64(time) : nil
    }

    func stop() {
        gst_pad_remove_probe(pad, probe)
        gst_object_unref(pad)
    }
}

/// moqsrc playing into an appsink `v` for video and one `a` for audio, both recorded from the first
/// sample on.
enum MoqSrcPlayer {
    /// Builds `moqsrc name=s <properties> s.video_0 ! appsink name=v s.audio_0 ! appsink name=a`,
    /// attaches the recorders and plays it.
    /// - Throws: when the pipeline cannot be built or does not start.
    static func start(_ properties: String, sync: Bool = false) throws -> (
        player: TestPipeline, video: SampleRecorder<SeenBuffer>, audio: SampleRecorder<SeenBuffer>
    ) {
        let player = try TestPipeline(
            "moqsrc name=s \(properties) s.video_0 ! appsink name=v sync=\(sync) s.audio_0 ! appsink name=a sync=\(sync)"
        )
        let video = try player.record("v")
        let audio = try player.record("a")
        guard player.play() != GST_STATE_CHANGE_FAILURE else {
            throw TestKitError.expectationFailed("moqsrc \(properties) did not start: \(player.errors)")
        }
        return (player, video, audio)
    }
}
