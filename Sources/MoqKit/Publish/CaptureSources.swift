// SPDX-License-Identifier: MIT
public import MoqCatalog
public import MoqPipeline

/// Where a video track's raw frames come from (moq-kit's `FrameSource` for video).
public protocol VideoSource: Sendable {
    /// The elements producing raw video (any format and size: the publisher converts).
    var videoElements: [PipelineNode] { get }
    /// A live source produces in real time; a file is paced to real time by the publisher.
    var isLive: Bool { get }
}

/// Where an audio track's raw samples come from (moq-kit's `FrameSource` for audio).
public protocol AudioSource: Sendable {
    /// The elements producing raw audio.
    var audioElements: [PipelineNode] { get }
    /// A live source produces in real time; a file is paced to real time by the publisher.
    var isLive: Bool { get }
}

/// A V4L2 camera (`v4l2src`).
public struct CameraCapture: VideoSource {
    /// The device node.
    public var device: String
    /// Capture size asked of the camera, when it matters (the encoder scales anyway).
    public var width: Int?
    /// Capture height.
    public var height: Int?

    /// The camera at `device` (default `/dev/video0`).
    public init(device: String = "/dev/video0", width: Int? = nil, height: Int? = nil) {
        self.device = device
        self.width = width
        self.height = height
    }

    public var isLive: Bool { true }

    public var videoElements: [PipelineNode] {
        var nodes = Element("v4l2src").set("device", device).nodes
        if let width, let height { nodes += Caps("video/x-raw", ["width": width, "height": height]).nodes }
        return nodes
    }
}

/// A microphone: PulseAudio (PipeWire's pulse server included), ALSA, or whatever `autoaudiosrc` picks.
public struct MicrophoneCapture: AudioSource {
    /// Which audio system to capture from.
    public enum System: String, Sendable {
        /// `pulsesrc`.
        case pulse
        /// `alsasrc`.
        case alsa
        /// `autoaudiosrc`.
        case automatic
    }

    /// The audio system.
    public var system: System
    /// A device name for that system (its default when nil).
    public var device: String?

    /// The default microphone of `system`.
    public init(system: System = .automatic, device: String? = nil) {
        self.system = system
        self.device = device
    }

    public var isLive: Bool { true }

    public var audioElements: [PipelineNode] {
        switch system {
        case .pulse: Element("pulsesrc").set("device", ifPresent: device).nodes
        case .alsa: Element("alsasrc").set("device", ifPresent: device).nodes
        case .automatic: Element("autoaudiosrc").nodes
        }
    }
}

/// An X11 display (`ximagesrc`), tuned for screen sharing: see ``ScreenCapture/init(display:frameRate:showPointer:)``.
public struct ScreenCapture: VideoSource {
    /// The X display (`:0`).
    public var display: String
    /// Captured frames per second.
    public var frameRate: Int
    /// Draw the mouse pointer.
    public var showPointer: Bool

    /// Captures `display` at `frameRate` (default 15: text stays sharp at a bitrate motion also fits in).
    ///
    /// `use-damage=false`: with XDamage, ximagesrc copies only changed rectangles into a buffer it
    /// reuses, which is cheaper on an idle desktop but tears under motion and costs more than a full
    /// grab once most of the screen changes (scrolling, video); the encoder skips unchanged areas anyway.
    public init(display: String = ":0", frameRate: Int = 15, showPointer: Bool = true) {
        self.display = display
        self.frameRate = frameRate
        self.showPointer = showPointer
    }

    public var isLive: Bool { true }

    public var videoElements: [PipelineNode] {
        Element("ximagesrc").set("display-name", display).set("use-damage", false).set("show-pointer", showPointer)
            .nodes + Caps("video/x-raw", ["framerate": Fraction(Int32(frameRate), 1)]).nodes
    }
}

/// A synthetic source: `videotestsrc` / `audiotestsrc` (tests, demos, checking a relay).
public struct TestPattern: VideoSource, AudioSource {
    /// videotestsrc's pattern (`smpte`, `ball`, `snow`…).
    public var pattern: String
    /// The tone's frequency, Hz.
    public var frequency: Double
    /// Stop after this many buffers (nil: forever).
    public var buffers: Int?

    /// A pattern and a tone.
    public init(pattern: String = "smpte", frequency: Double = 440, buffers: Int? = nil) {
        self.pattern = pattern
        self.frequency = frequency
        self.buffers = buffers
    }

    public var isLive: Bool { true }

    public var videoElements: [PipelineNode] {
        Element("videotestsrc").set("is-live", true).set("pattern", .nick(pattern)).set(
            "num-buffers", ifPresent: buffers
        )
        .nodes
    }

    public var audioElements: [PipelineNode] {
        Element("audiotestsrc").set("is-live", true).set("freq", frequency).set("num-buffers", ifPresent: buffers)
            .nodes
    }
}

/// A media file, decoded and paced to real time (`filesrc ! decodebin ! clocksync`).
public struct FileSource: VideoSource, AudioSource {
    /// The file.
    public var path: String

    /// The file at `path`.
    public init(path: String) {
        self.path = path
    }

    public var isLive: Bool { false }

    public var videoElements: [PipelineNode] {
        Element("filesrc").set("location", path).nodes + Element("decodebin").nodes
            + Caps("video/x-raw").nodes + Element("clocksync").nodes
    }

    public var audioElements: [PipelineNode] {
        Element("filesrc").set("location", path).nodes + Element("decodebin").nodes
            + Caps("audio/x-raw").nodes + Element("clocksync").nodes
    }
}

/// One encoded stream of a media file, published as it is: parsed, paced to real time, not decoded
/// (``Publisher/addEncodedTrack(name:stream:)``). Find a file's streams, and whether the catalog can
/// carry each, with ``MediaFileProbe``.
public struct EncodedFileStream: Sendable {
    /// The file.
    public var path: String
    /// Audio or video.
    public var kind: MediaKind
    /// The stream's media type after parsing (`video/x-h264`, `audio/x-opus`…): the file's first
    /// stream of that type is published.
    public var mediaType: String
    /// The codec string it is published with (for the track's ``PublishedTrack/codecInfo``).
    public var codec: String

    /// The stream of `probed` in the file at `path`.
    public init(path: String, probed: ProbedStream) {
        self.path = path
        kind = probed.kind
        mediaType = probed.mediaType
        switch probed.rendition?.config {
        case .video(let v)?: codec = v.codec
        case .audio(let a)?: codec = a.codec
        case nil: codec = probed.mediaType
        }
    }

    /// `filesrc ! parsebin ! <media type> ! clocksync`: parsed, paced, never decoded.
    var elements: [PipelineNode] {
        Element("filesrc").set("location", path).nodes + Element("parsebin").nodes + Caps(mediaType).nodes
            + Element("clocksync").nodes
    }
}
