// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPlayback

/// A Swift enum behind an enum property: its cases register the GEnum (value, description, nick),
/// so the property's values and what the element does with them come from one list.
protocol GEnumRepresentable: CaseIterable, RawRepresentable where RawValue == Int32 {
    /// The value's nick (what gst-launch and URIs write).
    var nick: String { get }
    /// The value's description (gst-inspect's).
    var summary: String { get }
}

extension GEnumRepresentable {
    /// Registers the GEnum `name` from the cases (once: call from a static `let`).
    static func registerGEnum(_ name: String) -> GType {
        registerEnum(name, allCases.map { ($0.rawValue, $0.summary, $0.nick) })
    }

    /// The case of a property value (nil: not one of ours).
    init?(gValue value: Int32) { self.init(rawValue: value) }

    /// The case with this nick.
    init?(nick: String) {
        guard let match = Self.allCases.first(where: { $0.nick == nick }) else { return nil }
        self = match
    }

    /// Every nick, in value order.
    static var nicks: [String] { allCases.map(\.nick) }
}

extension LatencyMode: GEnumRepresentable {}
extension Buffering: GEnumRepresentable {}
