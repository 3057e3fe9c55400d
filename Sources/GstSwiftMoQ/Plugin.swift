// SPDX-License-Identifier: MIT
public import CGStreamer

/// A C string with static storage (metadata GStreamer keeps pointers to).
func cLiteral(_ s: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// Registers every element of the plugin. Elements are added here as they are written.
private let pluginInit: GstPluginInitFunc = { plugin in
    PluginRegistry.registerAll(plugin)
}

/// The elements of the `swiftmoq` plugin.
enum PluginRegistry {
    /// Element registrations, run at plugin load.
    static let registrations: [@Sendable (OpaquePointer?) -> Bool] = [
        { MoqSinkType.register($0) },
        { MoqSrcType.register($0) },
    ]

    static func registerAll(_ plugin: OpaquePointer?) -> gboolean {
        for register in registrations where !register(plugin) { return 0 }
        return 1
    }
}

nonisolated(unsafe) private let pluginDescriptor: UnsafeMutablePointer<GstPluginDesc> = {
    var d = GstPluginDesc()
    d.major_version = GST_VERSION_MAJOR
    d.minor_version = GST_VERSION_MINOR
    d.name = cLiteral("swiftmoq")
    d.description = cLiteral("Media over QUIC (moq-lite-06) elements written in Swift")
    d.plugin_init = pluginInit
    d.version = cLiteral("0.1.0")
    // GStreamer's registry refuses licence strings it does not know: MIT is "MIT/X11".
    d.license = cLiteral("MIT/X11")
    d.source = cLiteral("swiftmoq")
    d.package = cLiteral("SwiftMoQ")
    d.origin = cLiteral("https://github.com/swiftmoq/swiftmoq")
    let p = UnsafeMutablePointer<GstPluginDesc>.allocate(capacity: 1)
    p.initialize(to: d)
    return p
}()

/// The plugin entry point GStreamer looks up in `libgstswiftmoq.so`.
@_cdecl("gst_plugin_swiftmoq_get_desc")
public func gst_plugin_swiftmoq_get_desc() -> UnsafePointer<GstPluginDesc> {
    UnsafePointer(pluginDescriptor)
}

/// Registers the plugin statically (applications and tests that link the elements in).
@_cdecl("gst_plugin_swiftmoq_register")
public func gst_plugin_swiftmoq_register() {
    let d = pluginDescriptor.pointee
    _ = gst_plugin_register_static(
        d.major_version, d.minor_version, d.name, d.description, d.plugin_init, d.version, d.license, d.source,
        d.package, d.origin)
}
