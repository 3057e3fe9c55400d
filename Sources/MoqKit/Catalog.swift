// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqCatalog
import MoqMedia

/// Pixel dimensions.
public struct VideoSize: Sendable, Equatable {
    /// Width in pixels.
    public let width: UInt32
    /// Height in pixels.
    public let height: UInt32
}

/// A video rendition's codec and format.
public struct VideoTrackConfig: Sendable, Equatable {
    /// WebCodecs codec string (`avc1.64001f`, `av01.0.08M.08`…).
    public let codec: String
    /// Coded size, when the publisher says.
    public let coded: VideoSize?
    /// Display aspect ratio, when the publisher says.
    public let displayRatio: VideoSize?
    /// Bitrate in bit/s, when the publisher says.
    public let bitrate: UInt64?
    /// Frames per second, when the publisher says.
    public let framerate: Double?
}

/// An audio rendition's codec and format.
public struct AudioTrackConfig: Sendable, Equatable {
    /// WebCodecs codec string (`opus`, `mp4a.40.2`…).
    public let codec: String
    /// Samples per second.
    public let sampleRate: UInt32
    /// Channels.
    public let channelCount: UInt32
    /// Bitrate in bit/s, when the publisher says.
    public let bitrate: UInt64?
}

/// A video track of a catalog.
public struct VideoTrackInfo: Sendable, Equatable {
    /// The track name to subscribe to.
    public let name: String
    /// Codec and format.
    public let config: VideoTrackConfig
    /// Why this machine cannot play it (no caps mapping, or no GStreamer decoder); nil when playable.
    public let unsupportedReason: String?
    /// True when ``unsupportedReason`` is nil.
    public var isPlayable: Bool { unsupportedReason == nil }
}

/// An audio track of a catalog.
public struct AudioTrackInfo: Sendable, Equatable {
    /// The track name to subscribe to.
    public let name: String
    /// Codec and format.
    public let config: AudioTrackConfig
    /// Why this machine cannot play it; nil when playable.
    public let unsupportedReason: String?
    /// True when ``unsupportedReason`` is nil.
    public var isPlayable: Bool { unsupportedReason == nil }
}

/// A broadcast's media tracks at one moment (each of ``Broadcast/catalogs()`` replaces the previous).
public struct Catalog: Sendable {
    /// The broadcast's path (relative to the subscription's prefix).
    public let path: String
    /// Video renditions, in catalog order.
    public let videoTracks: [VideoTrackInfo]
    /// Audio renditions, in catalog order.
    public let audioTracks: [AudioTrackInfo]
    /// The broadcast, for ``Player``.
    public let broadcast: Broadcast
    // The hang catalog as received.
    let raw: MoqCatalog.HangCatalog

    /// The video tracks this machine can decode.
    public var playableVideoTracks: [VideoTrackInfo] { videoTracks.filter(\.isPlayable) }
    /// The audio tracks this machine can decode.
    public var playableAudioTracks: [AudioTrackInfo] { audioTracks.filter(\.isPlayable) }

    init(_ raw: MoqCatalog.HangCatalog, broadcast: Broadcast) {
        self.raw = raw
        self.broadcast = broadcast
        path = broadcast.path
        let (playable, skipped) = MediaFormat.playable(in: raw)
        func reason(_ name: String) -> String? {
            if let p = playable.first(where: { $0.rendition.name == name }) {
                return DecoderRegistry.hasDecoder(forCaps: p.caps)
                    ? nil : "no GStreamer decoder for \(p.caps.prefix { $0 != "," }) is installed"
            }
            return skipped.first { $0.name == name }?.reason ?? "not playable"
        }
        var video: [VideoTrackInfo] = []
        var audio: [AudioTrackInfo] = []
        for rendition in raw.renditions {
            switch rendition.config {
            case .video(let v):
                let coded = zip2(v.codedWidth, v.codedHeight).map { VideoSize(width: $0, height: $1) }
                let ratio = zip2(v.displayAspectWidth, v.displayAspectHeight).map { VideoSize(width: $0, height: $1) }
                video.append(
                    VideoTrackInfo(
                        name: rendition.name,
                        config: VideoTrackConfig(
                            codec: v.codec, coded: coded, displayRatio: ratio, bitrate: v.bitrate,
                            framerate: v.framerate),
                        unsupportedReason: reason(rendition.name)))
            case .audio(let a):
                audio.append(
                    AudioTrackInfo(
                        name: rendition.name,
                        config: AudioTrackConfig(
                            codec: a.codec, sampleRate: a.sampleRate, channelCount: a.numberOfChannels,
                            bitrate: a.bitrate),
                        unsupportedReason: reason(rendition.name)))
            }
        }
        videoTracks = video
        audioTracks = audio
    }
}

private func zip2<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}

/// Which caps this machine's GStreamer can decode.
enum DecoderRegistry {
    static func hasDecoder(forCaps text: String) -> Bool {
        GstInitialization.ensure()
        guard let caps = gst_caps_from_string(text) else { return false }
        defer { gst_caps_unref(caps) }
        // GST_ELEMENT_FACTORY_TYPE_DECODER is a macro: bit 0.
        let all = gst_element_factory_list_get_elements(GstElementFactoryListType(1), GST_RANK_MARGINAL)
        defer { gst_plugin_feature_list_free(all) }
        let matching = gst_element_factory_list_filter(all, caps, GST_PAD_SINK, 0)
        defer { gst_plugin_feature_list_free(matching) }
        return matching != nil
    }
}
