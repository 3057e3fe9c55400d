// SPDX-License-Identifier: MIT
import CGStreamer
import SwiftMoQ

/// The `status` property's enum type, shared by moqsink and moqsrc.
enum ConnectionStatusType {
    static let type: GType = registerEnum(
        "GstMoqConnectionStatus",
        [
            (ReconnectingSession.Status.disconnected.rawValue, "Not connected", "disconnected"),
            (ReconnectingSession.Status.connecting.rawValue, "Connecting", "connecting"),
            (ReconnectingSession.Status.connected.rawValue, "Connected", "connected"),
            (ReconnectingSession.Status.reconnecting.rawValue, "Reconnecting after a loss", "reconnecting"),
            (ReconnectingSession.Status.failed.rawValue, "Failed (will not retry)", "failed"),
        ])

    /// The read-only `status` property both elements install (notify::status on every change).
    static func spec() -> UnsafeMutablePointer<GParamSpec> {
        Property.enumeration(
            "status", "Status", "Connection status (notify::status when it changes)", type: type, default: 0,
            flags: ParamFlags.readable)
    }
}
