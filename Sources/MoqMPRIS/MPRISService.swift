// SPDX-License-Identifier: MIT
import CGio
import Dispatch
import Glibc
import MoqSync

/// Media Player Remote Interfacing Specification (MPRIS) 2 on the D-Bus session bus: desktop
/// media keys, `playerctl` and panel applets see a SwiftMoQ player as
/// `org.mpris.MediaPlayer2.<name>` with Play/Pause/PlayPause/Stop, `Metadata` and
/// `PlaybackStatus`, and get `PropertiesChanged` when they change.
///
/// GDBus runs on a thread of its own with its own main context: method calls arrive there and
/// call the handlers; updates may come from any thread (`g_dbus_connection_emit_signal` is
/// thread-safe).
public final class MPRISService: @unchecked Sendable {
    /// What is playing, as MPRIS's `Metadata` says it.
    public struct Metadata: Sendable, Equatable {
        public var title: String?
        public var artist: String?
        public var album: String?
        /// `mpris:length`, µs.
        public var lengthUs: Int64?
        /// - Parameters: see the properties.
        public init(title: String? = nil, artist: String? = nil, album: String? = nil, lengthUs: Int64? = nil) {
            self.title = title
            self.artist = artist
            self.album = album
            self.lengthUs = lengthUs
        }
    }

    /// `PlaybackStatus`.
    public enum Status: String, Sendable {
        case playing = "Playing"
        case paused = "Paused"
        case stopped = "Stopped"
    }

    /// What the remote asks for.
    public struct Handlers: Sendable {
        public var play: @Sendable () -> Void
        public var pause: @Sendable () -> Void
        public var stop: @Sendable () -> Void
        /// - Parameters: see the properties.
        public init(
            play: @escaping @Sendable () -> Void, pause: @escaping @Sendable () -> Void,
            stop: @escaping @Sendable () -> Void
        ) {
            self.play = play
            self.pause = pause
            self.stop = stop
        }
    }

    /// Why the service could not start.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The bus name (`org.mpris.MediaPlayer2.swiftmoq`).
    public let busName: String
    static let objectPath = "/org/mpris/MediaPlayer2"

    private let handlers: Handlers
    private let state = Lock<(status: Status, metadata: Metadata, track: Int)>((.stopped, Metadata(), 0))
    /// The GDBus thread's objects (owned by that thread; read to emit signals and to quit).
    private struct Runtime: @unchecked Sendable {
        var connection: OpaquePointer?
        var loop: OpaquePointer?
        var context: OpaquePointer?
    }
    private let runtime = Lock(Runtime())

    /// Connects to the session bus (or `busAddress`, e.g. a private `dbus-daemon`), registers the
    /// objects and owns `org.mpris.MediaPlayer2.<name>`; returns once that is done.
    public init(name: String = "swiftmoq", busAddress: String? = nil, handlers: Handlers) throws(Failure) {
        busName = "org.mpris.MediaPlayer2.\(name)"
        self.handlers = handlers
        let started = Lock<String??>(nil)  // nil: no answer; .some(nil): up; .some(text): failed
        let signal = DispatchSemaphore(value: 0)
        let box = Unmanaged.passUnretained(self)
        startThread { [busAddress] in
            box.takeUnretainedValue().run(busAddress: busAddress) { failure in
                started.withLock { $0 = .some(failure) }
                signal.signal()
            }
        }
        _ = signal.wait(timeout: .now() + .seconds(10))
        switch started.withLock({ $0 }) {
        case .some(.none): return
        case .some(.some(let text)): throw Failure(description: text)
        case .none: throw Failure(description: "no answer from the D-Bus session bus within 10 s")
        }
    }

    deinit { close() }

    /// Leaves the bus.
    public func close() {
        let current = runtime.withLock { r in
            defer { r = Runtime() }
            return r
        }
        guard let loop = current.loop, let context = current.context else { return }
        // Quit from the loop's own thread.
        let quit = UnsafeMutableRawPointer(loop)
        g_main_context_invoke(
            context,
            { data in
                g_main_loop_quit(OpaquePointer(data))
                return 0
            }, quit)
    }

    /// Updates `PlaybackStatus` (and tells listeners).
    public func update(status: Status) {
        let changed = state.withLock { s -> Bool in
            defer { s.status = status }
            return s.status != status
        }
        if changed { emitChanged(["PlaybackStatus": g_variant_new_string(status.rawValue)]) }
    }

    /// Updates `Metadata` (and tells listeners).
    public func update(metadata: Metadata) {
        let changed = state.withLock { s -> Bool in
            guard s.metadata != metadata else { return false }
            s.metadata = metadata
            s.track += 1
            return true
        }
        if changed { emitChanged(["Metadata": metadataVariant()]) }
    }

    // MARK: The GDBus thread

    private func run(busAddress: String?, started: (String?) -> Void) {
        let context = g_main_context_new()!
        g_main_context_push_thread_default(context)
        defer {
            g_main_context_pop_thread_default(context)
            g_main_context_unref(context)
        }
        var error: UnsafeMutablePointer<GError>?
        let connection: OpaquePointer?
        if let busAddress {
            connection = g_dbus_connection_new_for_address_sync(
                busAddress,
                GDBusConnectionFlags(
                    rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                        | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue), nil, nil, &error)
        } else {
            connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error)
        }
        guard let connection else {
            started("cannot reach the D-Bus session bus: \(Self.message(error))")
            return
        }
        defer { g_object_unref(UnsafeMutableRawPointer(connection)) }
        guard let node = g_dbus_node_info_new_for_xml(Self.introspection, &error) else {
            started("bad introspection data: \(Self.message(error))")
            return
        }
        defer { g_dbus_node_info_unref(node) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var vtable = GDBusInterfaceVTable()
        vtable.method_call = { _, _, _, interface, method, _, invocation, data in
            let service = Unmanaged<MPRISService>.fromOpaque(data!).takeUnretainedValue()
            service.call(
                interface: String(cString: interface!), method: String(cString: method!), invocation: invocation!)
        }
        vtable.get_property = { _, _, _, interface, property, _, data in
            let service = Unmanaged<MPRISService>.fromOpaque(data!).takeUnretainedValue()
            return service.property(interface: String(cString: interface!), name: String(cString: property!))
        }
        var ids: [guint] = []
        var index = 0
        while let interfaces = node.pointee.interfaces, let info = interfaces[index] {
            let id = g_dbus_connection_register_object(connection, Self.objectPath, info, &vtable, me, nil, &error)
            guard id != 0 else {
                started("cannot register \(String(cString: info.pointee.name)): \(Self.message(error))")
                return
            }
            ids.append(id)
            index += 1
        }
        defer { for id in ids { g_dbus_connection_unregister_object(connection, id) } }
        // Own the name synchronously (RequestName), so that init returns with the name owned.
        let reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
            Self.tuple([g_variant_new_string(busName), g_variant_new_uint32(4)]),  // DO_NOT_QUEUE
            nil, G_DBUS_CALL_FLAGS_NONE, 5000, nil, &error)
        guard let reply else {
            started("cannot own \(busName): \(Self.message(error))")
            return
        }
        var result: guint32 = 0
        if let child = g_variant_get_child_value(reply, 0) {
            result = g_variant_get_uint32(child)
            g_variant_unref(child)
        }
        g_variant_unref(reply)
        guard result == 1 || result == 4 else {  // PRIMARY_OWNER, ALREADY_OWNER
            started("\(busName) is owned by another process")
            return
        }
        let loop = g_main_loop_new(context, 0)!
        defer { g_main_loop_unref(loop) }
        runtime.withLock { $0 = Runtime(connection: connection, loop: loop, context: context) }
        started(nil)
        g_main_loop_run(loop)
    }

    private func call(interface: String, method: String, invocation: OpaquePointer) {
        switch (interface, method) {
        case ("org.mpris.MediaPlayer2.Player", "Play"): handlers.play()
        case ("org.mpris.MediaPlayer2.Player", "Pause"): handlers.pause()
        case ("org.mpris.MediaPlayer2.Player", "PlayPause"):
            if state.withLock({ $0.status }) == .playing { handlers.pause() } else { handlers.play() }
        case ("org.mpris.MediaPlayer2.Player", "Stop"), ("org.mpris.MediaPlayer2", "Quit"): handlers.stop()
        case ("org.mpris.MediaPlayer2", "Raise"), ("org.mpris.MediaPlayer2.Player", "Next"),
            ("org.mpris.MediaPlayer2.Player", "Previous"), ("org.mpris.MediaPlayer2.Player", "Seek"),
            ("org.mpris.MediaPlayer2.Player", "SetPosition"), ("org.mpris.MediaPlayer2.Player", "OpenUri"):
            break  // CanGoNext, CanSeek… say false: nothing to do
        default:
            g_dbus_method_invocation_return_dbus_error(
                invocation, "org.freedesktop.DBus.Error.UnknownMethod", "no method \(method) on \(interface)")
            return
        }
        g_dbus_method_invocation_return_value(invocation, nil)
    }

    private func property(interface: String, name: String) -> OpaquePointer? {
        let s = state.withLock { $0 }
        switch name {
        case "PlaybackStatus": return g_variant_new_string(s.status.rawValue)
        case "Metadata": return metadataVariant()
        case "Identity": return g_variant_new_string("SwiftMoQ")
        case "CanPlay", "CanPause", "CanControl", "CanQuit": return g_variant_new_boolean(1)
        case "CanGoNext", "CanGoPrevious", "CanSeek", "CanRaise", "HasTrackList": return g_variant_new_boolean(0)
        case "Rate", "MinimumRate", "MaximumRate", "Volume": return g_variant_new_double(1)
        case "Position": return g_variant_new_int64(0)
        case "SupportedUriSchemes": return Self.strings(["moql", "moqt", "https"])
        case "SupportedMimeTypes": return Self.strings([])
        default: return nil
        }
    }

    private func metadataVariant() -> OpaquePointer {
        let (m, track) = state.withLock { ($0.metadata, $0.track) }
        var entries: [OpaquePointer?] = []
        func add(_ key: String, _ value: OpaquePointer) {
            entries.append(g_variant_new_dict_entry(g_variant_new_string(key), g_variant_new_variant(value)))
        }
        add("mpris:trackid", g_variant_new_object_path("/org/swiftmoq/track/\(track)"))
        if let title = m.title { add("xesam:title", g_variant_new_string(title)) }
        if let artist = m.artist { add("xesam:artist", Self.strings([artist])) }
        if let album = m.album { add("xesam:album", g_variant_new_string(album)) }
        if let length = m.lengthUs { add("mpris:length", g_variant_new_int64(gint64(length))) }
        let type = g_variant_type_new("{sv}")
        defer { g_variant_type_free(type) }
        return entries.withUnsafeBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
    }

    private func emitChanged(_ properties: [String: OpaquePointer]) {
        guard let connection = runtime.withLock({ $0 }).connection else {
            for value in properties.values { g_variant_unref(g_variant_ref_sink(value)) }
            return
        }
        let entryType = g_variant_type_new("{sv}")
        let stringType = g_variant_type_new("s")
        defer {
            g_variant_type_free(entryType)
            g_variant_type_free(stringType)
        }
        let entries: [OpaquePointer?] = properties.map {
            g_variant_new_dict_entry(g_variant_new_string($0.key), g_variant_new_variant($0.value))
        }
        let changed = entries.withUnsafeBufferPointer {
            g_variant_new_array(entryType, $0.baseAddress, gsize($0.count))
        }
        let invalidated = g_variant_new_array(stringType, nil, 0)
        let body: [OpaquePointer?] = [g_variant_new_string("org.mpris.MediaPlayer2.Player"), changed, invalidated]
        let parameters = body.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, 3) }
        g_dbus_connection_emit_signal(
            connection, nil, Self.objectPath, "org.freedesktop.DBus.Properties", "PropertiesChanged", parameters, nil)
    }

    private static func tuple(_ children: [OpaquePointer?]) -> OpaquePointer {
        children.withUnsafeBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }

    private static func strings(_ values: [String]) -> OpaquePointer {
        let type = g_variant_type_new("s")
        defer { g_variant_type_free(type) }
        let children: [OpaquePointer?] = values.map { g_variant_new_string($0) }
        return children.withUnsafeBufferPointer { g_variant_new_array(type, $0.baseAddress, gsize($0.count)) }
    }

    private static func message(_ error: UnsafeMutablePointer<GError>?) -> String {
        guard let error else { return "unknown error" }
        defer { g_error_free(error) }
        return String(cString: error.pointee.message)
    }

    static let introspection = """
        <node>
          <interface name="org.mpris.MediaPlayer2">
            <method name="Raise"/><method name="Quit"/>
            <property name="CanQuit" type="b" access="read"/>
            <property name="CanRaise" type="b" access="read"/>
            <property name="HasTrackList" type="b" access="read"/>
            <property name="Identity" type="s" access="read"/>
            <property name="SupportedUriSchemes" type="as" access="read"/>
            <property name="SupportedMimeTypes" type="as" access="read"/>
          </interface>
          <interface name="org.mpris.MediaPlayer2.Player">
            <method name="Next"/><method name="Previous"/><method name="Pause"/><method name="PlayPause"/>
            <method name="Stop"/><method name="Play"/>
            <method name="Seek"><arg direction="in" type="x" name="Offset"/></method>
            <method name="SetPosition">
              <arg direction="in" type="o" name="TrackId"/><arg direction="in" type="x" name="Position"/>
            </method>
            <method name="OpenUri"><arg direction="in" type="s" name="Uri"/></method>
            <signal name="Seeked"><arg name="Position" type="x"/></signal>
            <property name="PlaybackStatus" type="s" access="read"/>
            <property name="Rate" type="d" access="read"/>
            <property name="Metadata" type="a{sv}" access="read"/>
            <property name="Volume" type="d" access="read"/>
            <property name="Position" type="x" access="read"/>
            <property name="MinimumRate" type="d" access="read"/>
            <property name="MaximumRate" type="d" access="read"/>
            <property name="CanGoNext" type="b" access="read"/>
            <property name="CanGoPrevious" type="b" access="read"/>
            <property name="CanPlay" type="b" access="read"/>
            <property name="CanPause" type="b" access="read"/>
            <property name="CanSeek" type="b" access="read"/>
            <property name="CanControl" type="b" access="read"/>
          </interface>
        </node>
        """
}

/// A detached pthread running `body` (GDBus's thread: it must not be a cooperative-pool thread).
private func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    let box = Unmanaged.passRetained(Body(body)).toOpaque()
    var thread = pthread_t()
    pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, box)
    pthread_detach(thread)
}
