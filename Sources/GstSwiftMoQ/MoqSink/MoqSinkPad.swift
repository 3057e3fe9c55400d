// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqSync

/// `GstMoqSinkPad`: a sink pad with a `track` property naming its track, and read-only
/// `track-status` and `track-error` saying how publishing it goes.
enum MoqSinkPadType {
    enum Prop: UInt32 {
        case track = 1, trackStatus, trackError
    }

    static let info = SubclassInfo()

    static let type: GType = registerSubclass(
        parent: gst_pad_get_type(), name: "GstMoqSinkPad", info: info, classInit: classInit, instanceInit: instanceInit)

    static func state(_ pad: UnsafeMutableRawPointer?) -> PadProperties {
        attachedObject(pad!, info: info, as: PadProperties.self)
    }

    static let instanceInit: GInstanceInitFunc = { instance, _ in
        attachObject(PadProperties(), to: UnsafeMutableRawPointer(instance!), info: info)
    }

    static let classInit: GClassInitFunc = { klass, _ in
        info.parentClass = g_type_class_peek_parent(klass)
        let gobject = cast(klass, GObjectClass.self)
        gobject.pointee.set_property = { object, id, value, _ in
            guard id == Prop.track.rawValue else { return }
            let props = MoqSinkPadType.state(UnsafeMutableRawPointer(object))
            let name = string(from: value)
            if !props.setTrack(name) {
                g_log_default_handler(
                    "moqsink", G_LOG_LEVEL_WARNING, "the track of a pad can only be set before its caps arrive", nil)
            }
        }
        gobject.pointee.get_property = { object, id, value, _ in
            let props = MoqSinkPadType.state(UnsafeMutableRawPointer(object))
            switch Prop(rawValue: id) {
            case .track: g_value_set_string(value, props.track)
            case .trackStatus: g_value_set_enum(value, props.status.status.rawValue)
            case .trackError: g_value_set_string(value, props.status.error)
            case nil: break
            }
        }
        gobject.pointee.finalize = { object in
            detachObject(UnsafeMutableRawPointer(object!), info: MoqSinkPadType.info)
            cast(MoqSinkPadType.info.parentClass, GObjectClass.self).pointee.finalize?(object)
        }
        g_object_class_install_property(
            gobject, Prop.track.rawValue,
            Property.string(
                "track", "Track",
                "Name of the track this pad publishes (default: <index>.<codec>, e.g. 0.avc1, 1.opus)",
                flags: ParamFlags.readWrite | ParamFlags.mutablePlaying))
        g_object_class_install_property(
            gobject, Prop.trackStatus.rawValue,
            Property.enumeration(
                "track-status", "Track status",
                "What this pad's track is doing (notify::track-status when it changes)", type: TrackStatus.gType,
                default: TrackStatus.waiting.rawValue, flags: ParamFlags.readable))
        g_object_class_install_property(
            gobject, Prop.trackError.rawValue,
            Property.string(
                "track-error", "Track error",
                "Why this pad's input was refused (track-status=error), else null", flags: ParamFlags.readable))
    }
}

/// The properties of a sink pad (set from any thread, read by its streaming thread).
final class PadProperties: @unchecked Sendable {
    private let state = Lock<(track: String?, locked: Bool, runtime: SinkPad?)>((nil, false, nil))
    private let trackStatus = Lock<(status: TrackStatus, error: String?)>((.waiting, nil))

    /// `track-status` and `track-error`.
    var status: (status: TrackStatus, error: String?) { trackStatus.withLock { $0 } }

    /// Sets `track-status` (and `track-error`: the reason for `.error`, else cleared); true when
    /// either changed (the caller notifies).
    func setStatus(_ status: TrackStatus, error: String? = nil) -> Bool {
        trackStatus.withLock { s in
            let new = (status, status == .error ? error : nil)
            guard s.status != new.0 || s.error != new.1 else { return false }
            s = new
            return true
        }
    }

    /// The pad's publishing logic (set once, right after the pad is created). Read by the
    /// streaming thread under the lock: GStreamer's own hand-off (GLib mutexes on a futex) is
    /// invisible to ThreadSanitizer, and the element should not depend on it anyway.
    var runtime: SinkPad? {
        get { state.withLock { $0.runtime } }
        set { state.withLock { $0.runtime = newValue } }
    }

    var track: String? { state.withLock { $0.track } }

    /// Returns false when the track name is already in use (after caps).
    func setTrack(_ name: String?) -> Bool {
        state.withLock { s in
            guard !s.locked else { return false }
            s.track = name
            return true
        }
    }

    /// Allows renaming again (the element stopped).
    func unlock() { state.withLock { $0.locked = false } }

    /// Freezes the name once the pad publishes.
    func lock() -> String? {
        state.withLock { s in
            s.locked = true
            return s.track
        }
    }
}
