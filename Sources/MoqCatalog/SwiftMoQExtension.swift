// SPDX-License-Identifier: MIT

/// SwiftMoQ's member of the hang catalog, `"swiftmoq": {…}`. Hang readers (moq-dev's player,
/// the Rust peer) ignore members they do not know, so it travels in every snapshot at no cost.
///
/// - `clockEpochUs`: the Unix time (µs) at the publisher's timestamp 0, for viewers that show
///   publish-to-render latency.
/// - `item` and `itemStartUs`: the publisher's timeline authority. A publisher that moves to
///   another item (the next song, a skip) numbers it and says at which timestamp it starts; every
///   track begins a group there. A long-form player that is still playing the previous item from
///   its deep buffer jumps to that group instead of playing out what the publisher left.
/// - `live`: false when the publisher's input is not live (a file pushed as fast as it is read):
///   the broadcast is finite and every group of it is cached at once, so a long-form player
///   plays it from its start rather than a deep budget behind its end.
public struct SwiftMoQExtension: Sendable, Equatable {
    /// The Unix time in µs at timestamp 0.
    public var clockEpochUs: UInt64?
    /// The publisher's current item (it counts up when the publisher moves on).
    public var item: UInt64?
    /// The timestamp (µs) at which ``item`` starts.
    public var itemStartUs: UInt64?
    /// Whether the publisher's input is live (nil: not said).
    public var live: Bool?
    /// The track carrying what is playing (``NowPlaying``), if the publisher has one.
    public var nowPlayingTrack: String?

    /// - Parameters: see the properties.
    public init(clockEpochUs: UInt64? = nil, item: UInt64? = nil, itemStartUs: UInt64? = nil, live: Bool? = nil) {
        self.clockEpochUs = clockEpochUs
        self.item = item
        self.itemStartUs = itemStartUs
        self.live = live
    }

    /// Reads the member from a catalog; members that are missing or not unsigned integers are nil.
    public init(catalog: HangCatalog) {
        guard case .object(let object)? = catalog.extra[Self.member] else {
            self.init()
            return
        }
        func number(_ key: String) -> UInt64? {
            if case .number(let n)? = object[key] { return n.uint64Value }
            return nil
        }
        var live: Bool?
        if case .bool(let value)? = object["live"] { live = value }
        self.init(
            clockEpochUs: number("clockEpochUs"), item: number("item"), itemStartUs: number("itemStartUs"), live: live)
        if case .string(let name)? = object["nowPlaying"], !name.isEmpty, name.utf8.count <= 256 {
            nowPlayingTrack = name
        }
    }

    /// True when the publisher said its input is not live: a finite broadcast, played from its start.
    public var isFinite: Bool { live == false }

    /// The item and its start, when both are given.
    public var timelineItem: (item: UInt64, startUs: UInt64)? {
        guard let item, let itemStartUs else { return nil }
        return (item, itemStartUs)
    }

    /// Writes the member into `catalog` (removes it when every field is nil).
    public func write(into catalog: inout HangCatalog) {
        var entries: [(key: String, value: JSONValue)] = []
        if let clockEpochUs { entries.append(("clockEpochUs", .number(JSONNumber(clockEpochUs)))) }
        if let item { entries.append(("item", .number(JSONNumber(item)))) }
        if let itemStartUs { entries.append(("itemStartUs", .number(JSONNumber(itemStartUs)))) }
        if let live { entries.append(("live", .bool(live))) }
        if let nowPlayingTrack { entries.append(("nowPlaying", .string(nowPlayingTrack))) }
        catalog.extra[Self.member] = entries.isEmpty ? nil : .object(JSONObject(entries))
    }

    /// The catalog member's name.
    public static let member = "swiftmoq"
}
