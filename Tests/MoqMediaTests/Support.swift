// SPDX-License-Identifier: MIT
import CGStreamer
import CGstApp
import GstSupport
import MoqCatalog
import MoqWire
import Testing

@testable import MoqMedia

/// GStreamer is initialised once for the whole test process, by the same once-token MoqMedia uses.
let gstReady: Void = GstInitialization.ensure()

struct PipelineError: Error, CustomStringConvertible {
    let description: String
}

/// What an encoder pipeline delivered to its `appsink name=s`: the negotiated caps and the buffers.
final class Encoded: @unchecked Sendable {
    let caps: UnsafeMutablePointer<GstCaps>
    let buffers: [[UInt8]]

    init(caps: UnsafeMutablePointer<GstCaps>, buffers: [[UInt8]]) {
        self.caps = caps
        self.buffers = buffers
    }

    deinit { gst_caps_unref(caps) }

    var capsString: String {
        let text = gst_caps_to_string(caps)!
        defer { g_free(text) }
        return String(cString: text)
    }

    /// The rendition moqsink would publish, through the pointer entry point the element uses.
    func rendition() throws -> MediaRendition { try MediaFormat.rendition(forCaps: caps) }
}

/// A pipeline built from a gst-launch description, torn down on deinit.
final class Pipeline {
    let element: UnsafeMutablePointer<GstElement>

    init(_ description: String) throws {
        _ = gstReady
        var error: UnsafeMutablePointer<GError>?
        let element = gst_parse_launch_full(description, nil, GST_PARSE_FLAG_FATAL_ERRORS, &error)
        if let error {
            defer { g_error_free(error) }
            throw PipelineError(description: "\(description): \(String(cString: error.pointee.message))")
        }
        guard let element else { throw PipelineError(description: "\(description): no pipeline") }
        self.element = UnsafeMutableRawPointer(gst_object_ref_sink(element)).assumingMemoryBound(to: GstElement.self)
    }

    deinit {
        gst_element_set_state(element, GST_STATE_NULL)
        gst_object_unref(element)
    }

    /// A named element (a new reference, released by the caller's `defer`).
    func child<T>(_ name: String, as type: T.Type) throws -> UnsafeMutablePointer<T> {
        let bin = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstBin.self)
        guard let child = gst_bin_get_by_name(bin, name) else { throw PipelineError(description: "no element \(name)") }
        return UnsafeMutableRawPointer(child).assumingMemoryBound(to: T.self)
    }

    func play() throws {
        guard gst_element_set_state(element, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE else {
            throw PipelineError(description: "cannot start: \(errorMessage() ?? "state change failed")")
        }
    }

    /// The first ERROR on the bus, if any.
    func errorMessage() -> String? {
        let bus = gst_element_get_bus(element)!
        defer { gst_object_unref(bus) }
        guard let message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR) else { return nil }
        defer { gst_message_unref(message) }
        var error: UnsafeMutablePointer<GError>?
        var debug: UnsafeMutablePointer<gchar>?
        gst_message_parse_error(message, &error, &debug)
        defer {
            g_error_free(error)
            g_free(debug)
        }
        return error.map { String(cString: $0.pointee.message) } ?? "error"
    }

    /// Every sample an appsink receives until EOS (or 10 s without one).
    func drain(_ sinkName: String) throws -> (caps: UnsafeMutablePointer<GstCaps>?, buffers: [[UInt8]]) {
        let sink = try child(sinkName, as: GstAppSink.self)
        defer { gst_object_unref(sink) }
        var caps: UnsafeMutablePointer<GstCaps>?
        var buffers: [[UInt8]] = []
        while let sample = gst_app_sink_try_pull_sample(sink, 10 * 1_000_000_000) {
            defer { gst_sample_unref(sample) }
            if caps == nil, let c = gst_sample_get_caps(sample) { caps = gst_caps_ref(c) }
            if let buffer = gst_sample_get_buffer(sample) {
                let size = Int(gst_buffer_get_size(buffer))
                var bytes = [UInt8](repeating: 0, count: size)
                _ = bytes.withUnsafeMutableBytes { gst_buffer_extract(buffer, 0, $0.baseAddress, gsize(size)) }
                buffers.append(bytes)
            }
        }
        if let error = errorMessage() { throw PipelineError(description: error) }
        return (caps, buffers)
    }
}

/// Runs `<source> ! appsink name=s` and returns the negotiated caps and the buffers.
func encode(_ description: String) throws -> Encoded {
    let pipeline = try Pipeline(description + " ! appsink name=s sync=false")
    try pipeline.play()
    let (caps, buffers) = try pipeline.drain("s")
    guard let caps, !buffers.isEmpty else { throw PipelineError(description: "\(description): no buffers") }
    return Encoded(caps: caps, buffers: buffers)
}

/// A small raw video source: I420 so the encoders pick their common 8-bit 4:2:0 profiles.
func video(_ frames: Int = 3, width: Int = 320, height: Int = 240) -> String {
    "videotestsrc num-buffers=\(frames) ! video/x-raw,format=I420,width=\(width),height=\(height),framerate=30/1"
}

func audio(_ buffers: Int = 5, rate: Int = 48000, channels: Int = 2) -> String {
    "audiotestsrc num-buffers=\(buffers) samplesperbuffer=960 ! audio/x-raw,rate=\(rate),channels=\(channels)"
}

/// Pushes `buffers` with the caps `moqsrc` would set for `config` through `decodebin` and
/// returns how many decoded buffers came out: the caps are what a player accepts.
func decode(_ config: RenditionConfig, _ buffers: [[UInt8]], frame: UInt64 = 33_333_333) throws -> Int {
    let caps = try MediaFormat.makeCaps(for: config)
    defer { gst_caps_unref(caps) }
    let pipeline = try Pipeline("appsrc name=src format=time ! decodebin ! appsink name=out sync=false")
    let src = try pipeline.child("src", as: GstAppSrc.self)
    defer { gst_object_unref(src) }
    gst_app_src_set_caps(src, caps)
    try pipeline.play()
    for (i, bytes) in buffers.enumerated() {
        let buffer = bytes.withUnsafeBytes { gst_buffer_new_memdup($0.baseAddress, gsize($0.count)) }!
        buffer.pointee.pts = GstClockTime(UInt64(i) * frame)
        buffer.pointee.duration = GstClockTime(frame)
        guard gst_app_src_push_buffer(src, buffer) == GST_FLOW_OK else {
            throw PipelineError(description: "push failed: \(pipeline.errorMessage() ?? "")")
        }
    }
    gst_app_src_end_of_stream(src)
    return try pipeline.drain("out").buffers.count
}

/// Caps equality as GStreamer sees it.
func capsEqual(_ actual: String, _ expected: String) -> Bool {
    _ = gstReady
    guard let a = gst_caps_from_string(actual), let b = gst_caps_from_string(expected) else { return false }
    defer {
        gst_caps_unref(a)
        gst_caps_unref(b)
    }
    return gst_caps_is_equal(a, b) != 0
}

func hex(_ text: String) -> [UInt8] { Hex.decode(text.filter { !$0.isWhitespace })! }

extension MediaRendition {
    var video: VideoConfig? {
        if case .video(let v) = config { return v }
        return nil
    }

    var audio: AudioConfig? {
        if case .audio(let a) = config { return a }
        return nil
    }
}
