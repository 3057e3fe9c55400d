// SPDX-License-Identifier: MIT
import CGStreamer

/// The GObject side of `moqsink`: type registration, properties, the `sink_%u`
/// request-pad template and vfuncs that forward to ``MoqSink``.
enum MoqSinkType {
    static let info = SubclassInfo()
    nonisolated(unsafe) static var category: UnsafeMutablePointer<GstDebugCategory>!
    nonisolated(unsafe) static var statusSpec: UnsafeMutablePointer<GParamSpec>!

    enum Prop: UInt32, ElementPropertyID {
        case url = 1, broadcast, tlsDisableVerify, tlsFingerprint, tlsRootFile, authToken, status, connected,
            moqVersion, stats, cacheDuration, item, keyframeInterval, quicIdleTimeout, quicKeepAlive,
            connectionStats, sessions, estimatedSendRate, estimatedRecvRate, estimatedSendBitrate,
            estimatedRecvBitrate, moqProtocol
    }

    /// Accepted caps: what the catalog can describe (stream layouts the sink can frame).
    static let sinkCaps = """
        video/x-h264, stream-format=(string){ avc, byte-stream }, alignment=(string)au; \
        video/x-h265, stream-format=(string){ hvc1, hev1, byte-stream }, alignment=(string)au; \
        video/x-av1, stream-format=(string)obu-stream, alignment=(string){ tu, frame }; \
        video/x-vp8; video/x-vp9; \
        audio/x-opus, channel-mapping-family=(int)[0, 1]; \
        audio/mpeg, mpegversion=(int)4, stream-format=(string)raw; \
        audio/mpeg, mpegversion=(int)1, layer=(int)3; \
        audio/x-flac, framed=(boolean)true; \
        audio/x-raw, format=(string)F32LE, layout=(string)interleaved; \
        video/quicktime, variant=(string){ iso, iso-fragmented }; \
        text/x-raw, format=(string){ utf8, pango-markup }; \
        application/x-moq-data
        """

    static let type: GType = {
        category = debugCategory("moqsink", "Media over QUIC (moq-lite) sink")
        let t = registerSubclass(
            parent: gst_element_get_type(), name: "GstMoqSink", info: info, classInit: classInit,
            instanceInit: instanceInit)
        ChildProxySupport.add(to: t)
        return t
    }()

    static func register(_ plugin: OpaquePointer?) -> Bool {
        _ = MoqSinkPadType.type
        return gst_element_register(plugin, "moqsink", guint(GST_RANK_NONE.rawValue), type) != 0
    }

    static func sink(_ pointer: UnsafeMutableRawPointer?) -> MoqSink {
        attachedObject(pointer!, info: info, as: MoqSink.self)
    }

    static let instanceInit: GInstanceInitFunc = { instance, _ in
        let element = UnsafeMutableRawPointer(instance!).assumingMemoryBound(to: GstElement.self)
        attachObject(MoqSink(element: element), to: UnsafeMutableRawPointer(instance!), info: info)
        // Bins wait for EOS from elements flagged as sinks.
        swiftmoq_object_flag_set(element, GST_ELEMENT_FLAG_SINK.rawValue)
    }

    static let classInit: GClassInitFunc = { klass, _ in
        info.parentClass = g_type_class_peek_parent(klass)
        let gobject = cast(klass, GObjectClass.self)
        gobject.pointee.set_property = { object, id, value, _ in
            MoqSinkType.sink(UnsafeMutableRawPointer(object)).setProperty(id, value!)
        }
        gobject.pointee.get_property = { object, id, value, _ in
            MoqSinkType.sink(UnsafeMutableRawPointer(object)).getProperty(id, value!)
        }
        gobject.pointee.finalize = { object in
            MoqSinkType.sink(UnsafeMutableRawPointer(object)).finalize()
            detachObject(UnsafeMutableRawPointer(object!), info: MoqSinkType.info)
            cast(MoqSinkType.info.parentClass, GObjectClass.self).pointee.finalize?(object)
        }
        let rw = ParamFlags.readWrite | ParamFlags.mutableReady | ParamFlags.showDefault
        let ro = ParamFlags.readable
        for prop in [
            Prop.url, .tlsDisableVerify, .tlsFingerprint, .tlsRootFile, .authToken, .quicIdleTimeout, .quicKeepAlive,
            .moqProtocol,
        ] {
            guard let connection = prop.connection else { continue }
            g_object_class_install_property(gobject, prop.rawValue, connection.spec())
        }
        for prop in [
            Prop.connectionStats, .sessions, .estimatedSendRate, .estimatedRecvRate, .estimatedSendBitrate,
            .estimatedRecvBitrate,
        ] {
            guard let status = prop.statusProperty else { continue }
            g_object_class_install_property(gobject, prop.rawValue, status.spec())
        }
        g_object_class_install_property(
            gobject, Prop.broadcast.rawValue,
            Property.string("broadcast", "Broadcast", "Broadcast path to publish, e.g. room/cam", flags: rw))
        g_object_class_install_property(
            gobject, Prop.cacheDuration.rawValue,
            Property.uint(
                "cache-duration", "Cache duration",
                "How long (ms) each track's groups are kept for late joiners, in this element and, through the track's max age, at the relay (within its --cache-bytes and --cache-max-age): what a long-form player (moqsrc buffering=long-form) can buffer at once",
                min: 1_000, max: 3_600_000, default: 30_000, flags: rw))
        g_object_class_install_property(
            gobject, Prop.keyframeInterval.rawValue,
            Property.uint(
                "keyframe-interval", "Keyframe interval",
                "With several video pads (a ladder: one picture encoded at several bitrates), every video pad's encoder is asked for a keyframe at the same running times, this far apart (ms), so that every rendition starts its groups at the same frame and a player can change rendition at any group boundary (force-key-unit upstream; set the encoders' key-int-max above it). 0: never asked; one video pad: never asked",
                min: 0, max: 60_000, default: 2_000, flags: rw))
        g_object_class_install_property(
            gobject, Prop.item.rawValue,
            Property.uint(
                "item", "Item",
                "The publisher's item (a song, a programme). Set a new value, while playing, when the next one starts: every track begins a group there, the catalog says so, and long-form players (moqsrc buffering=long-form) jump to it at once instead of playing out what they buffered of the previous one",
                min: 0, max: UInt32.max, default: 0,
                flags: ParamFlags.readWrite | ParamFlags.mutablePlaying | ParamFlags.showDefault))
        statusSpec = ConnectionStatusType.spec()
        g_object_class_install_property(gobject, Prop.status.rawValue, statusSpec)
        g_object_class_install_property(
            gobject, Prop.connected.rawValue,
            Property.bool("connected", "Connected", "Whether a session with the relay is up", default: false, flags: ro)
        )
        g_object_class_install_property(
            gobject, Prop.moqVersion.rawValue,
            Property.string(
                "moq-version", "MoQ version",
                "The negotiated protocol version (moq-lite-06; moqt-16 or moq-00 for IETF MoQ Transport drafts 16 and 14)",
                flags: ro))
        g_object_class_install_property(
            gobject, Prop.stats.rawValue,
            Property.structure(
                "stats", "Statistics",
                "Per-track frames/groups/bytes published and groups dropped; session RTT, send rate, bytes sent, groups dropped, reconnects",
                flags: ro))

        let element = cast(klass, GstElementClass.self)
        gst_element_class_set_metadata(
            element, "Media over QUIC sink", "Sink/Network/MoQ",
            "Publishes its inputs as a moq-lite broadcast (hang catalog, one track per pad) to a MoQ relay",
            "SwiftMoQ authors")
        let caps = gst_caps_from_string(sinkCaps)
        let template = gst_pad_template_new_with_gtype(
            "sink_%u", GST_PAD_SINK, GST_PAD_REQUEST, caps, MoqSinkPadType.type)
        gst_element_class_add_pad_template(element, template)
        gst_caps_unref(caps)
        element.pointee.request_new_pad = { element, template, name, _ in
            MoqSinkType.sink(UnsafeMutableRawPointer(element)).requestPad(
                template: template!, name: name.map { String(cString: $0) })
        }
        element.pointee.release_pad = { element, pad in
            MoqSinkType.sink(UnsafeMutableRawPointer(element)).releasePad(pad!)
        }
        element.pointee.change_state = { element, transition in
            MoqSinkType.sink(UnsafeMutableRawPointer(element)).changeState(transition)
        }
        element.pointee.set_context = { element, context in
            if let context { MoqSinkType.sink(UnsafeMutableRawPointer(element)).setContext(context) }
            cast(MoqSinkType.info.parentClass, GstElementClass.self).pointee.set_context?(element, context)
        }
    }

    /// Chains a state change to GstElement's implementation.
    static func parentChangeState(_ element: UnsafeMutablePointer<GstElement>, _ transition: GstStateChange)
        -> GstStateChangeReturn
    {
        cast(info.parentClass, GstElementClass.self).pointee.change_state!(element, transition)
    }
}
