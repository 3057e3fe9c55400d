// SPDX-License-Identifier: MIT
import CGStreamer
import CGstAudio
import GstSupport
import GstSwiftMoQ

/// The GObject side of `moqtestaudiosink`: a GstAudioSink subclass whose vfuncs drive a
/// ``RenderedAudioDevice``, so that GstAudioBaseSink (its ring buffer, clock, alignment, resyncs,
/// clipping and the silence it writes when nothing was committed) runs as it does above alsasink.
enum RenderedAudioSinkType {
    static let info = SubclassInfo()

    enum Prop: UInt32 {
        case frequency = 1, stats
    }

    static let caps = """
        audio/x-raw, format=(string){ F32LE, S16LE }, layout=(string)interleaved, \
        rate=(int)[ 8000, 192000 ], channels=(int)[ 1, 8 ]
        """

    static let type: GType = registerSubclass(
        parent: gst_audio_sink_get_type(), name: "GstMoqTestAudioSink", info: info, classInit: classInit,
        instanceInit: instanceInit)

    static func device(_ pointer: UnsafeMutableRawPointer?) -> RenderedAudioDevice {
        attachedObject(pointer!, info: info, as: RenderedAudioDevice.self)
    }

    static let instanceInit: GInstanceInitFunc = { instance, _ in
        attachObject(RenderedAudioDevice(), to: UnsafeMutableRawPointer(instance!), info: info)
    }

    static let classInit: GClassInitFunc = { klass, _ in
        info.parentClass = g_type_class_peek_parent(klass)
        let gobject = cast(klass, GObjectClass.self)
        gobject.pointee.set_property = { object, id, value, _ in
            guard Prop(rawValue: id) == .frequency, let value else { return }
            RenderedAudioSinkType.device(UnsafeMutableRawPointer(object)).frequency = g_value_get_double(value)
        }
        gobject.pointee.get_property = { object, id, value, _ in
            guard let prop = Prop(rawValue: id), let value else { return }
            let device = RenderedAudioSinkType.device(UnsafeMutableRawPointer(object))
            switch prop {
            case .frequency: g_value_set_double(value, device.frequency)
            case .stats: g_value_take_boxed(value, device.report.structure())
            }
        }
        gobject.pointee.finalize = { object in
            detachObject(UnsafeMutableRawPointer(object!), info: RenderedAudioSinkType.info)
            cast(RenderedAudioSinkType.info.parentClass, GObjectClass.self).pointee.finalize?(object)
        }
        g_object_class_install_property(
            gobject, Prop.frequency.rawValue,
            Property.double(
                "frequency", "Frequency",
                "The sine to follow in what is rendered (Hz; audiotestsrc wave=sine freq=…). The default, 50·(8+0.618…), shifts its phase visibly for every drop or repeat of 1 to 20 whole 20 ms frames",
                min: 1, max: 20_000, default: ToneTracker.defaultFrequency,
                flags: ParamFlags.readWrite | ParamFlags.mutableReady | ParamFlags.showDefault))
        g_object_class_install_property(
            gobject, Prop.stats.rawValue,
            Property.structure(
                "stats", "Statistics",
                "What the emulated device played, channel 0: rendered-samples, tone-ms, tone-start-ms, silence-gaps, silence-ms, longest-silence-ms, discontinuities, first-discontinuities, resyncs (GstAudioBaseSink's resync warnings), warnings, first-warnings, underruns, underrun-ms, amplitude, rate, channels, format, frequency-hz",
                flags: ParamFlags.readable))

        let element = cast(klass, GstElementClass.self)
        gst_element_class_set_metadata(
            element, "Rendered audio test sink", "Sink/Audio",
            "A GstAudioSink on an emulated sound card playing in real time: measures the sine it renders (silences, phase discontinuities) and counts GstAudioBaseSink's resyncs",
            "SwiftMoQ authors")
        let sinkCaps = gst_caps_from_string(caps)
        gst_element_class_add_pad_template(
            element, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sinkCaps))
        gst_caps_unref(sinkCaps)

        let audio = cast(klass, GstAudioSinkClass.self)
        audio.pointee.open = { sink in
            AudioBaseSinkWarnings.ensure()
            RenderedAudioSinkType.device(UnsafeMutableRawPointer(sink)).open()
            return 1
        }
        audio.pointee.close = { _ in 1 }
        audio.pointee.prepare = { sink, spec in
            guard let spec, spec.pointee.type == GST_AUDIO_RING_BUFFER_FORMAT_TYPE_RAW,
                let finfo = spec.pointee.info.finfo
            else { return 0 }
            let sample: RenderedAudioDevice.SampleFormat
            switch finfo.pointee.format {
            case GST_AUDIO_FORMAT_F32LE: sample = .f32
            case GST_AUDIO_FORMAT_S16LE: sample = .s16
            default: return 0
            }
            let info = spec.pointee.info
            let format = RenderedAudioDevice.Format(
                sample: sample, rate: Int(info.rate), channels: Int(info.channels), bytesPerFrame: Int(info.bpf))
            // The segment size and count stay GStreamer's (latency-time 10 ms, buffer-time 200 ms).
            return RenderedAudioSinkType.device(UnsafeMutableRawPointer(sink)).prepare(format) ? 1 : 0
        }
        audio.pointee.unprepare = { sink in
            RenderedAudioSinkType.device(UnsafeMutableRawPointer(sink)).unprepare()
            return 1
        }
        audio.pointee.write = { sink, data, length in
            guard let data else { return 0 }
            return gint(
                RenderedAudioSinkType.device(UnsafeMutableRawPointer(sink)).write(data, length: Int(length)))
        }
        audio.pointee.delay = { sink in
            guint(RenderedAudioSinkType.device(UnsafeMutableRawPointer(sink)).delay())
        }
        audio.pointee.reset = { sink in
            RenderedAudioSinkType.device(UnsafeMutableRawPointer(sink)).reset()
        }
    }
}
