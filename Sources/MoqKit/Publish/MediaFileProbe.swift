// SPDX-License-Identifier: MIT
import CGstPbutils
import GstSupport
public import MoqCatalog
public import MoqMedia

/// One audio or video stream of a media file, as GStreamer's discoverer sees it after parsing.
public struct ProbedStream: Sendable, Equatable {
    /// Audio or video.
    public var kind: MediaKind
    /// The stream's caps as parsed (`video/x-h264, stream-format=avc, …`).
    public var caps: String
    /// The caps' media type (`video/x-h264`): what a pipeline filters the parsed stream on.
    public var mediaType: String
    /// The catalog entry moqsink would publish for it as it is, or nil with ``reason``.
    public var rendition: MediaRendition?
    /// Why it cannot be published without re-encoding (nil when it can).
    public var reason: String?
}

/// Why a file could not be probed.
public struct MediaFileProbeError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
}

/// What a media file holds: its streams' codecs, to publish them as they are (no decoding and
/// re-encoding) when the catalog can describe them (GStreamer's discoverer).
///
/// It lives here rather than in MoqMedia: a file there that uses the discoverer makes Swift resolve
/// `GstCaps` through the pbutils module in some build batchings, which breaks MoqMedia's
/// `package` signatures that take or return `GstCaps` (a clean `-j 2` build failed, `-j 1` passed).
public enum MediaFileProbe {
    /// The audio and video streams of the file at `path`, in the file's order. Blocks while the
    /// file is read (usually milliseconds, at most `timeout`): call it before playback starts, or
    /// off the cooperative pool.
    public static func streams(inFile path: String, timeout: Duration = .seconds(10)) throws(MediaFileProbeError)
        -> [ProbedStream]
    {
        GstInitialization.ensure()
        var error: UnsafeMutablePointer<GError>?
        guard let uri = gst_filename_to_uri(path, &error) else {
            throw MediaFileProbeError(description: "\(path): \(Self.take(error) ?? "not a file name")")
        }
        defer { g_free(uri) }
        let ns = GstClockTime(max(0, timeout.components.seconds) * 1_000_000_000)
        guard let discoverer = gst_discoverer_new(ns, &error) else {
            throw MediaFileProbeError(description: "cannot probe files: \(Self.take(error) ?? "no discoverer")")
        }
        defer { gst_object_unref(UnsafeMutableRawPointer(discoverer)) }
        let info = gst_discoverer_discover_uri(discoverer, uri, &error)
        defer { if let info { gst_object_unref(UnsafeMutableRawPointer(info)) } }
        let message = Self.take(error)
        guard let info, message == nil, gst_discoverer_info_get_result(info) == GST_DISCOVERER_OK else {
            throw MediaFileProbeError(description: "\(path): \(message ?? "not a media file GStreamer can read")")
        }
        var streams: [ProbedStream] = []
        let list = gst_discoverer_info_get_stream_list(info)
        defer { gst_discoverer_stream_info_list_free(list) }
        var node = list
        while let n = node {
            defer { node = n.pointee.next }
            guard let stream = n.pointee.data.map(OpaquePointer.init),
                let nick = gst_discoverer_stream_info_get_stream_type_nick(stream).map({ String(cString: $0) }),
                let kind: MediaKind = nick == "video" ? .video : nick == "audio" ? .audio : nil,
                let caps = gst_discoverer_stream_info_get_caps(stream)
            else { continue }
            defer { gst_caps_unref(caps) }
            let text = capsString(caps)
            let mediaType = gst_caps_get_structure(caps, 0).map { String(cString: gst_structure_get_name($0)) } ?? ""
            var probed = ProbedStream(kind: kind, caps: text, mediaType: mediaType)
            do {
                probed.rendition = try MediaFormat.rendition(forCaps: text)
            } catch {
                probed.reason = "\(error)"
            }
            streams.append(probed)
        }
        return streams
    }

    private static func take(_ error: UnsafeMutablePointer<GError>?) -> String? {
        guard let error else { return nil }
        defer { g_error_free(error) }
        return String(cString: error.pointee.message)
    }
}
