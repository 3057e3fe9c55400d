// SPDX-License-Identifier: MIT
public import MoqBase
public import MoqWire

/// OBJECT_DATAGRAM: one object in one QUIC DATAGRAM (docs/ietf/moqt-wire.md §7.4):
/// `type | track alias | group | [object id] | [publisher priority] | [extensions] | status or payload`,
/// the payload running to the datagram's end.
///
/// The type is a set of flags on both drafts (`0x01` extensions, `0x02` end of group, `0x04` object
/// id omitted (object 0), `0x20` status), with two differences: draft-14 has no `0x08` (priority
/// omitted) and its status types always carry the object id (`0x20`, `0x21`); draft-16 refuses a
/// status that also ends the group. SwiftMoQ maps a datagram group (one frame) onto object 0 with
/// END_OF_GROUP and the frame's timestamp as property `0x10`, which is what moq-ffi 0.4.18 sends
/// (type `0x07`, measured).
public struct ObjectDatagram: Sendable, Equatable {
    /// What follows the header.
    public enum Body: Sendable, Equatable {
        /// The object's payload (possibly empty).
        case payload(Bytes)
        /// The status of an object without a payload.
        case status(ObjectStatus)
    }

    public var trackAlias: UInt64
    public var group: UInt64
    public var object: UInt64
    /// Nil on draft-16's DEFAULT_PRIORITY types (the subscription's priority applies).
    public var publisherPriority: UInt8?
    /// No object after this one exists in the group.
    public var endOfGroup: Bool
    /// Nil: the type says no extensions follow. Present ones are never empty on the wire.
    public var extensions: KeyValuePairs?
    public var body: Body

    public init(
        trackAlias: UInt64, group: UInt64, object: UInt64 = 0, publisherPriority: UInt8? = 0, endOfGroup: Bool = true,
        extensions: KeyValuePairs? = nil, body: Body
    ) {
        self.trackAlias = trackAlias
        self.group = group
        self.object = object
        self.publisherPriority = publisherPriority
        self.endOfGroup = endOfGroup
        self.extensions = extensions
        self.body = body
    }

    /// Object property Timestamp (`0x10`), and the older key moq-dev wrote first (`0x06`).
    public static let timestampKey: UInt64 = 0x10
    static let olderTimestampKey: UInt64 = 0x06

    /// The object's Timestamp property, if it carries one (`0x10`, or the older `0x06`). moq-ffi 0.4.18
    /// writes `0x10` on every datagram, on drafts 14 and 16 alike, in the track's timescale (µs for
    /// moq-lite tracks).
    public var timestamp: UInt64? {
        extensions.flatMap { $0.varint(Self.timestampKey) ?? $0.varint(Self.olderTimestampKey) }
    }

    /// Whether `type` is an OBJECT_DATAGRAM type of `version`.
    public static func isDatagramType(_ type: UInt64, version: MoqtVersion) -> Bool {
        switch version {
        case .draft14: type <= 0x07 || type == 0x20 || type == 0x21
        case .draft16: type & ~0x2F == 0 && !(type & 0x20 != 0 && type & 0x02 != 0)
        }
    }

    /// The type these fields make on `version`. Draft-14 cannot omit the priority (0 is written),
    /// nor the object id of a status; a status never ends a group (the flag is dropped).
    public func datagramType(version: MoqtVersion) -> UInt64 {
        var type: UInt64 = 0
        if extensions.map({ !$0.isEmpty }) == true { type |= 0x01 }
        let isStatus: Bool
        if case .status = body { isStatus = true } else { isStatus = false }
        if isStatus {
            type |= 0x20
        } else if endOfGroup {
            type |= 0x02
        }
        if object == 0 && !(isStatus && version == .draft14) { type |= 0x04 }
        if publisherPriority == nil && version == .draft16 { type |= 0x08 }
        return type
    }

    /// The datagram's bytes.
    public func encoded(version: MoqtVersion) -> [UInt8] {
        let type = datagramType(version: version)
        var w = WireWriter()
        w.writeVarInt(type)
        w.writeVarInt(trackAlias)
        w.writeVarInt(group)
        if type & 0x04 == 0 { w.writeVarInt(object) }
        if type & 0x08 == 0 { w.writeUInt8(publisherPriority ?? 0) }
        if type & 0x01 != 0, let extensions {
            var ext = WireWriter()
            extensions.encode(into: &ext, version: version, counted: false)
            w.writeVarInt(UInt64(ext.bytes.count))
            w.writeBytes(ext.bytes)
        }
        switch body {
        case .status(let status): w.writeVarInt(status.rawValue)
        case .payload(let payload): w.writeBytes(payload)
        }
        return w.bytes
    }

    /// Reads one datagram (all of `bytes`).
    ///
    /// - Throws: ``DecodeError/unknownType(_:)`` for a type `version` does not define,
    ///   ``DecodeError/invalidValue(_:)`` for an empty extensions block or an unknown status,
    ///   ``DecodeError/trailingBytes(_:)`` after a status, ``DecodeError/short`` when cut.
    public static func decode(_ bytes: Bytes, version: MoqtVersion) throws(DecodeError) -> ObjectDatagram {
        var r = WireReader(bytes)
        let type = try r.readVarInt()
        guard isDatagramType(type, version: version) else { throw .unknownType(type) }
        let alias = try r.readVarInt()
        let group = try r.readVarInt()
        let object = type & 0x04 == 0 ? try r.readVarInt() : 0
        let priority: UInt8? = type & 0x08 == 0 ? try r.readUInt8() : nil
        var extensions: KeyValuePairs?
        if type & 0x01 != 0 {
            let length = try r.readLength(limit: MoqtLimits.maxObjectExtensions)
            guard length > 0 else { throw .invalidValue("empty extensions on a datagram") }
            var ext = WireReader(try r.readBytes(count: length))
            extensions = try KeyValuePairs.decode(from: &ext, version: version, counted: false)
        }
        let body: Body
        if type & 0x20 != 0 {
            let raw = try r.readVarInt()
            guard let status = ObjectStatus(rawValue: raw), !(status == .doesNotExist && version == .draft16) else {
                throw .invalidValue("object status \(raw)")
            }
            try r.expectEnd()
            body = .status(status)
        } else {
            body = .payload(r.readRest())
        }
        return ObjectDatagram(
            trackAlias: alias, group: group, object: object, publisherPriority: priority,
            endOfGroup: type & 0x02 != 0, extensions: extensions, body: body)
    }
}
