// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback

/// The GObject side of `moqsrc`: type registration, properties, the `video_%u` /
/// `audio_%u` sometimes-pad templates, the URI handler, and vfuncs that forward to ``MoqSrc``.
enum MoqSrcType {
    static let info = SubclassInfo()
    nonisolated(unsafe) static var category: UnsafeMutablePointer<GstDebugCategory>!
    nonisolated(unsafe) static var statusSpec: UnsafeMutablePointer<GParamSpec>!
    nonisolated(unsafe) static var videoTemplate: UnsafeMutablePointer<GstPadTemplate>!
    nonisolated(unsafe) static var audioTemplate: UnsafeMutablePointer<GstPadTemplate>!
    nonisolated(unsafe) static var dataTemplate: UnsafeMutablePointer<GstPadTemplate>!
    nonisolated(unsafe) static var textTemplate: UnsafeMutablePointer<GstPadTemplate>!
    /// What a `data_%u` pad carries: one buffer per frame of a named track (moqsink's data caps).
    static let dataCaps = "application/x-moq-data"

    enum Prop: UInt32, ElementPropertyID {
        case url = 1, broadcast, prefix, tlsDisableVerify, tlsFingerprint, tlsRootFile, authToken, latency,
            videoTrack, audioTrack, timeout, status, moqVersion, stats, uriTLS, buffering, bufferDuration,
            dataTracks, queue, latencyMode, catchUp, abr, maxResolution, maxBitrate, quicIdleTimeout, quicKeepAlive,
            connectionStats, sessions, estimatedSendRate, estimatedRecvRate, estimatedSendBitrate,
            estimatedRecvBitrate, diagnostics, moqProtocol
    }

    /// `latency-mode`'s values (``LatencyMode``).
    static let latencyModeType: GType = LatencyMode.registerGEnum("GstMoqSrcLatencyMode")

    /// `buffering`'s values (``Buffering``).
    static let bufferingType: GType = Buffering.registerGEnum("GstMoqSrcBuffering")

    /// What the pads carry: the parsers' input caps for each codec the catalog can name.
    static let videoCaps = """
        video/x-h264, stream-format=(string){ avc, byte-stream }, alignment=(string)au; \
        video/x-h265, stream-format=(string){ hvc1, hev1, byte-stream }, alignment=(string)au; \
        video/x-av1; video/x-vp8; video/x-vp9
        """
    static let audioCaps = """
        audio/x-opus; audio/mpeg, mpegversion=(int)4; audio/mpeg, mpegversion=(int)1, layer=(int)3; \
        audio/x-flac, framed=(boolean)true; audio/x-raw, format=(string)F32LE, layout=(string)interleaved
        """

    static let type: GType = {
        category = debugCategory("moqsrc", "Media over QUIC (moq-lite) source")
        let t = registerSubclass(
            parent: gst_element_get_type(), name: "GstMoqSrc", info: info, classInit: classInit,
            instanceInit: instanceInit)
        URIHandlerSupport.add(to: t)
        return t
    }()

    static func register(_ plugin: OpaquePointer?) -> Bool {
        gst_element_register(plugin, "moqsrc", guint(GST_RANK_NONE.rawValue), type) != 0
    }

    static func src(_ pointer: UnsafeMutableRawPointer?) -> MoqSrc {
        attachedObject(pointer!, info: info, as: MoqSrc.self)
    }

    static let instanceInit: GInstanceInitFunc = { instance, _ in
        let element = UnsafeMutableRawPointer(instance!).assumingMemoryBound(to: GstElement.self)
        attachObject(MoqSrc(element: element), to: UnsafeMutableRawPointer(instance!), info: info)
        swiftmoq_object_flag_set(element, GST_ELEMENT_FLAG_SOURCE.rawValue)
    }

    static let classInit: GClassInitFunc = { klass, _ in
        info.parentClass = g_type_class_peek_parent(klass)
        let gobject = cast(klass, GObjectClass.self)
        gobject.pointee.set_property = { object, id, value, _ in
            MoqSrcType.src(UnsafeMutableRawPointer(object)).setProperty(id, value!)
        }
        gobject.pointee.get_property = { object, id, value, _ in
            MoqSrcType.src(UnsafeMutableRawPointer(object)).getProperty(id, value!)
        }
        gobject.pointee.finalize = { object in
            MoqSrcType.src(UnsafeMutableRawPointer(object)).finalize()
            detachObject(UnsafeMutableRawPointer(object!), info: MoqSrcType.info)
            cast(MoqSrcType.info.parentClass, GObjectClass.self).pointee.finalize?(object)
        }
        installProperties(gobject)

        let element = cast(klass, GstElementClass.self)
        gst_element_class_set_metadata(
            element, "Media over QUIC source", "Source/Network/MoQ",
            "Plays a moq-lite broadcast from a MoQ relay: one pad per chosen rendition of its hang catalog, on one live timeline",
            "SwiftMoQ authors")
        for (name, text) in [("video_%u", videoCaps), ("audio_%u", audioCaps)] {
            let caps = gst_caps_from_string(text)
            let template = gst_pad_template_new(name, GST_PAD_SRC, GST_PAD_SOMETIMES, caps)
            gst_element_class_add_pad_template(element, template)
            gst_caps_unref(caps)
            if name.hasPrefix("video") { videoTemplate = template } else { audioTemplate = template }
        }
        let caps = gst_caps_from_string(dataCaps)
        dataTemplate = gst_pad_template_new("data_%u", GST_PAD_SRC, GST_PAD_SOMETIMES, caps)
        gst_element_class_add_pad_template(element, dataTemplate)
        gst_caps_unref(caps)
        let textCaps = gst_caps_from_string(CaptionPad.caps)
        textTemplate = gst_pad_template_new("text_%u", GST_PAD_SRC, GST_PAD_SOMETIMES, textCaps)
        gst_element_class_add_pad_template(element, textTemplate)
        gst_caps_unref(textCaps)
        element.pointee.change_state = { element, transition in
            MoqSrcType.src(UnsafeMutableRawPointer(element)).changeState(transition)
        }
        element.pointee.set_context = { element, context in
            if let context { MoqSrcType.src(UnsafeMutableRawPointer(element)).setContext(context) }
            cast(MoqSrcType.info.parentClass, GstElementClass.self).pointee.set_context?(element, context)
        }
        element.pointee.send_event = { element, event in
            MoqSrcType.src(UnsafeMutableRawPointer(element)).sendEvent(event!) ? 1 : 0
        }
    }

    private static func installProperties(_ gobject: UnsafeMutablePointer<GObjectClass>) {
        let rw = ParamFlags.readWrite | ParamFlags.mutableReady | ParamFlags.showDefault
        let live = ParamFlags.readWrite | ParamFlags.mutablePlaying | ParamFlags.showDefault
        let ro = ParamFlags.readable
        let specs: [(Prop, UnsafeMutablePointer<GParamSpec>)] = [
            (.url, ConnectionProperty.url.spec()),
            (
                .broadcast,
                Property.string(
                    "broadcast", "Broadcast", "Broadcast path to play (relative to the URL's root), e.g. room/cam",
                    flags: rw)
            ),
            (
                .prefix,
                Property.string(
                    "prefix", "Prefix",
                    "Instead of broadcast: play the first broadcast announced under this path; when it ends, the next one (subscribed before the current one ends and spliced in without a gap)",
                    flags: rw)
            ),
            (
                .queue,
                Property.string(
                    "queue", "Queue",
                    "Broadcasts to play after broadcast, in order, comma-separated: each is subscribed and prerolled before the one playing ends, and starts where it ends (gapless). Settable while playing: the new list replaces what is left of the queue",
                    flags: live)
            ),
            (.tlsDisableVerify, ConnectionProperty.tlsDisableVerify.spec()),
            (.tlsFingerprint, ConnectionProperty.tlsFingerprint.spec()),
            (.tlsRootFile, ConnectionProperty.tlsRootFile.spec()),
            (.authToken, ConnectionProperty.authToken.spec()),
            (.quicIdleTimeout, ConnectionProperty.quicIdleTimeout.spec()),
            (.quicKeepAlive, ConnectionProperty.quicKeepAlive.spec()),
            (.moqProtocol, ConnectionProperty.moqProtocol.spec()),
            (
                .uriTLS,
                Property.bool(
                    "uri-tls", "TLS settings from the URI",
                    "Honour tls-fingerprint and tls-disable-verify in a moql:// URI (playbin's uri). Off by default: a URI may come from a playlist or another party and must not weaken or redirect the certificate check (SWIFTMOQ_URI_TLS=1 in the environment also turns it on)",
                    default: false, flags: rw)
            ),
            (
                .latency,
                Property.uint(
                    "latency", "Latency",
                    "Jitter budget in ms (setting it makes latency-mode=auto fixed). fixed: frames are rendered this long after the live edge (answered in the LATENCY query); adaptive: the most the jitter margin may grow to. Groups older than twice it are skipped (may change while playing)",
                    min: 0, max: MoqSrc.maxLatencyMs, default: 100, flags: live)
            ),
            (
                .latencyMode,
                Property.enumeration(
                    "latency-mode", "Latency mode",
                    "auto (default): adaptive, or fixed when latency is set (a pipeline that asks for a budget gets it); adaptive: start with no jitter margin beyond the pipeline's own latency and grow it (never above latency) when frames at the live edge arrive late, for the lowest glass-to-glass latency the path allows; fixed: always latency ms, as rtpjitterbuffer does",
                    type: latencyModeType, default: 0, flags: rw)
            ),
            (
                .catchUp,
                Property.bool(
                    "catch-up", "Catch up",
                    "Live playback returns to its target latency after a stall: once the path is steady again (2 s), whole audio frames are dropped at quiet moments (at most one in five) and video follows, until the live edge plays at its target (within a few seconds of a 1 s stall). false: keep everything and stay behind (recordings). Long-form playback never catches up",
                    default: true, flags: rw)
            ),
            (
                .buffering,
                Property.enumeration(
                    "buffering", "Buffering",
                    "live: frames are rendered latency ms after the live edge and late groups are skipped; long-form: a deep buffer (buffer-duration) filled faster than real time from the relay's cache, played without skipping, so that an outage shorter than what is buffered is not heard",
                    type: bufferingType, default: 0, flags: rw)
            ),
            (
                .bufferDuration,
                Property.uint(
                    "buffer-duration", "Buffer duration",
                    "Long-form buffering: how far behind the live edge playback runs (ms), i.e. how much media the subscription asks for and keeps; playback starts at once from the oldest cached frame",
                    min: 1_000, max: 600_000, default: 30_000, flags: rw)
            ),
            (
                .videoTrack,
                Property.string(
                    "video-track", "Video track",
                    "Video rendition to play (catalog track name; one the catalog does not list yet is waited for 1.5 s, then the first playable plays, with a WARNING); default: the first playable; \"none\": no video",
                    flags: live)
            ),
            (
                .audioTrack,
                Property.string(
                    "audio-track", "Audio track",
                    "Audio rendition to play (catalog track name; one the catalog does not list yet is waited for 1.5 s, then the first playable plays, with a WARNING); default: the first playable; \"none\": no audio",
                    flags: live)
            ),
            (
                .abr,
                Property.bool(
                    "abr", "Adaptive bitrate",
                    "When the catalog's video renditions are a ladder (one picture at several bitrates or sizes, one codec), play the highest the path carries: step down before a stall, step up only after a trial at a group boundary, spliced without a gap (audio untouched). Off, or video-track set, or a stream selected: one rendition plays",
                    default: true, flags: live)
            ),
            (
                .maxResolution,
                Property.string(
                    "max-resolution", "Maximum resolution",
                    "WIDTHxHEIGHT (either may be 0: any): video renditions coded larger are not chosen (the smallest stays if none fits), e.g. 1280x720 for a small window",
                    flags: live)
            ),
            (
                .maxBitrate,
                Property.uint(
                    "max-bitrate", "Maximum bitrate",
                    "Video renditions whose catalog bitrate is higher (bit/s) are not chosen (the lowest stays if none fits); 0: any",
                    min: 0, max: UInt32.max, default: 0, flags: live)
            ),
            (
                .dataTracks,
                Property.string(
                    "data-tracks", "Data tracks",
                    "Named tracks outside the catalog to play too, comma-separated (e.g. chat,telemetry): a data_%u pad each (application/x-moq-data, one buffer per frame, timestamped on the broadcast's timeline once media plays), the mirror of moqsink's data pads",
                    flags: rw)
            ),
            (
                .timeout,
                Property.uint(
                    "timeout", "Timeout",
                    "Seconds to wait for the relay to answer and for the broadcast to be announced before an error (0: wait forever)",
                    min: 0,
                    max: MoqSrc.maxTimeoutS, default: 10, flags: rw)
            ),
            (
                .moqVersion,
                Property.string(
                    "moq-version", "MoQ version",
                    "The negotiated protocol version (moq-lite-06; moqt-16 or moq-00 for IETF MoQ Transport drafts 16 and 14)",
                    flags: ro)
            ),
            (
                .stats,
                Property.structure(
                    "stats", "Statistics",
                    "Playback statistics (moq-kit's PlaybackStats names): per kind latency, fps, bitrate, frames, drops, stalls, buffer, time to first frame; RTT, bytes received, reconnects",
                    flags: ro)
            ),
        ]
        let diagnostics = Property.bool(
            "diagnostics", "Diagnostics",
            "Post a moq-drop element message for every frame or group not played (fields kind, track, stage, reason, pts-us, group, count, bytes; moq-kit's DropStage and DropReason in kebab-case), for telemetry: MoqKit's Player.diagnostics() turns it on (may change while playing)",
            default: false, flags: live)
        let status: [(Prop, UnsafeMutablePointer<GParamSpec>)] = [
            Prop.connectionStats, .sessions, .estimatedSendRate, .estimatedRecvRate, .estimatedSendBitrate,
            .estimatedRecvBitrate,
        ].compactMap { prop in prop.statusProperty.map { (prop, $0.spec()) } }
        statusSpec = ConnectionStatusType.spec()
        for (prop, spec) in specs + status + [(.status, statusSpec), (.diagnostics, diagnostics)] {
            g_object_class_install_property(gobject, prop.rawValue, spec)
        }
    }

    /// Chains a state change to GstElement's implementation.
    static func parentChangeState(_ element: UnsafeMutablePointer<GstElement>, _ transition: GstStateChange)
        -> GstStateChangeReturn
    {
        cast(info.parentClass, GstElementClass.self).pointee.change_state!(element, transition)
    }
}
