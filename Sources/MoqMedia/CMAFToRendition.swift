// SPDX-License-Identifier: MIT
import CGStreamer
import CGstPbutils
import GstSupport
public import MoqCatalog
public import MoqWire

extension MediaFormat {
    /// The catalog rendition of one track of a CMAF init segment, as `moqsink` publishes a
    /// fragmented MP4 input: the codec string and description GStreamer derives from the sample
    /// entry (as for the same codec in elementary caps), and `container` `cmaf` with the track's
    /// own init segment.
    /// - Throws: ``MediaFormatError`` for a sample entry this build does not publish.
    public static func rendition(forCMAF track: CMAFTrack, initSegment: Bytes) throws(MediaFormatError)
        -> MediaRendition
    {
        GstInitialization.ensure()
        let caps = try cmafCaps(track)
        var rendition = try rendition(forCaps: caps)
        let container = Container(.cmaf(initSegment: initSegment))
        switch rendition.config {
        case .video(var v):
            v.container = container
            rendition.config = .video(v)
        case .audio(var a):
            a.container = container
            rendition.config = .audio(a)
        }
        // Samples keep the MP4 layout (length-prefixed NAL units, raw audio packets).
        rendition.isProvisional = false
        return rendition
    }

    /// Elementary caps equivalent to a CMAF track's sample entry.
    static func cmafCaps(_ track: CMAFTrack) throws(MediaFormatError) -> String {
        let hex = track.configuration.map { Hex.encode($0.array) } ?? ""
        let entry = track.sampleEntry
        func unsupported(_ why: String) -> MediaFormatError {
            .unsupportedCaps(caps: "video/quicktime (track \(track.trackID), \(entry))", reason: why)
        }
        switch entry {
        case "avc1", "avc3", "hvc1", "hev1":
            guard !hex.isEmpty else { throw unsupported("the \(entry) sample entry has no decoder configuration") }
            let media = entry.hasPrefix("avc") ? "video/x-h264" : "video/x-h265"
            let format = entry == "avc1" ? "avc" : entry
            return "\(media), stream-format=(string)\(format), alignment=(string)au, codec_data=(buffer)\(hex), "
                + "width=(int)\(track.width), height=(int)\(track.height)"
        case "Opus":
            guard let head = track.opusHead else { throw unsupported("the Opus sample entry has no valid dOps") }
            let created = head.withUnsafeBytes { raw -> UnsafeMutablePointer<GstCaps>? in
                guard let buffer = gst_buffer_new_memdup(raw.baseAddress, gsize(raw.count)) else { return nil }
                defer { gst_buffer_unref(buffer) }
                return gst_codec_utils_opus_create_caps_from_header(buffer, nil)
            }
            guard let caps = created else { throw unsupported("GStreamer rejects the Opus header") }
            defer { gst_caps_unref(caps) }
            return capsString(caps)
        case "mp4a":
            guard let asc = track.audioSpecificConfig else {
                throw unsupported("the mp4a sample entry has no AudioSpecificConfig")
            }
            return
                "audio/mpeg, mpegversion=(int)4, stream-format=(string)raw, codec_data=(buffer)\(Hex.encode(asc.array)), "
                + "channels=(int)\(track.channels), rate=(int)\(track.sampleRate)"
        default:
            throw unsupported("sample entry \(entry) is not published (supported: avc1, avc3, hvc1, hev1, Opus, mp4a)")
        }
    }
}
