// SPDX-License-Identifier: MIT
public import MoqBase
public import MoqWire

/// The header of a subgroup data stream (docs/ietf/moqt-wire.md §7.2):
/// `type | track alias | group | [subgroup] | [publisher priority]`, the type's bits saying which
/// fields follow and whether objects carry extensions.
public struct SubgroupHeader: Sendable, Equatable {
    /// How the subgroup id is given.
    public enum Subgroup: Sendable, Equatable {
        /// Subgroup 0, no field (moq-dev requires it).
        case zero
        /// The first object's id, no field.
        case firstObject
        /// A field.
        case id(UInt64)
    }

    public var trackAlias: UInt64
    public var group: UInt64
    public var subgroup: Subgroup
    /// Nil on draft-16's DEFAULT_PRIORITY types (the track's priority applies).
    public var publisherPriority: UInt8?
    /// Whether every object carries an extension-headers length (and extensions).
    public var hasExtensions: Bool
    /// Whether the stream's last object is the group's last.
    public var endOfGroup: Bool

    public init(
        trackAlias: UInt64, group: UInt64, subgroup: Subgroup = .zero, publisherPriority: UInt8? = 0,
        hasExtensions: Bool = false, endOfGroup: Bool = true
    ) {
        self.trackAlias = trackAlias
        self.group = group
        self.subgroup = subgroup
        self.publisherPriority = publisherPriority
        self.hasExtensions = hasExtensions
        self.endOfGroup = endOfGroup
    }

    /// The stream type these fields make (moq-dev sends `0x19`: subgroup 0, extensions, end of group).
    public func streamType(version: MoqtVersion) -> UInt64 {
        var type: UInt64 = 0x10
        if hasExtensions { type |= 0x01 }
        switch subgroup {
        case .zero: break
        case .firstObject: type |= 0x02
        case .id: type |= 0x04
        }
        if endOfGroup { type |= 0x08 }
        if publisherPriority == nil, version == .draft16 { type |= 0x20 }
        return type
    }

    /// Whether `type` opens a subgroup stream on `version`.
    public static func isSubgroupType(_ type: UInt64, version: MoqtVersion) -> Bool {
        let allowed: UInt64 = version == .draft16 ? 0x3F : 0x1F
        return type & ~allowed == 0 && type & 0x10 != 0 && type & 0x06 != 0x06
    }

    public func encode(into w: inout WireWriter, version: MoqtVersion) {
        w.writeVarInt(streamType(version: version))
        w.writeVarInt(trackAlias)
        w.writeVarInt(group)
        if case .id(let id) = subgroup { w.writeVarInt(id) }
        if version == .draft14 || publisherPriority != nil { w.writeUInt8(publisherPriority ?? 0) }
    }

    /// Reads a header whose type was already read.
    public static func decode(type: UInt64, from r: inout WireReader, version: MoqtVersion) throws(DecodeError)
        -> SubgroupHeader
    {
        guard isSubgroupType(type, version: version) else { throw .unknownType(type) }
        let alias = try r.readVarInt()
        let group = try r.readVarInt()
        let subgroup: Subgroup
        switch type & 0x06 {
        case 0x00: subgroup = .zero
        case 0x02: subgroup = .firstObject
        default: subgroup = .id(try r.readVarInt())
        }
        let priority: UInt8? = type & 0x20 == 0 ? try r.readUInt8() : nil
        return SubgroupHeader(
            trackAlias: alias, group: group, subgroup: subgroup, publisherPriority: priority,
            hasExtensions: type & 0x01 != 0, endOfGroup: type & 0x08 != 0)
    }
}

/// An object's status when its payload is empty.
public enum ObjectStatus: UInt64, Sendable {
    case normal = 0x0
    /// Draft-14 only.
    case doesNotExist = 0x1
    case endOfGroup = 0x3
    case endOfTrack = 0x4
}

/// One object on a subgroup stream.
public struct SubgroupObject: Sendable, Equatable {
    public var id: UInt64
    /// Extension headers (only on streams whose header says so).
    public var extensions: KeyValuePairs
    public var payload: Bytes
    /// `.normal` for objects with a payload.
    public var status: ObjectStatus

    public init(id: UInt64, extensions: KeyValuePairs = KeyValuePairs(), payload: Bytes, status: ObjectStatus = .normal)
    {
        self.id = id
        self.extensions = extensions
        self.payload = payload
        self.status = status
    }

    /// Writes the object after `previous` (the id of the object before it on the stream, nil for the
    /// first). An id at or below `previous` is written as the next one (ids only grow on a stream).
    public func encode(into w: inout WireWriter, after previous: UInt64?, header: SubgroupHeader, version: MoqtVersion)
    {
        let delta: UInt64 =
            if let previous { id > previous ? id - previous - 1 : 0 } else { id }
        w.writeVarInt(delta)
        if header.hasExtensions {
            var ext = WireWriter()
            extensions.encode(into: &ext, version: version, counted: false)
            w.writeVarInt(UInt64(ext.bytes.count))
            w.writeBytes(ext.bytes)
        }
        w.writeVarInt(UInt64(payload.count))
        if payload.count == 0 { w.writeVarInt(status.rawValue) }
        w.writeBytes(payload)
    }
}

/// Decodes a subgroup stream as its bytes arrive: the header, then each object once all its bytes
/// are here (an object's payload is bounded by ``MoqtLimits/maxObjectPayload``).
public struct SubgroupStreamDecoder: Sendable {
    /// What the stream has yielded so far.
    public enum Event: Sendable, Equatable {
        case header(SubgroupHeader)
        case object(SubgroupObject)
    }

    public let version: MoqtVersion
    public private(set) var header: SubgroupHeader?
    private var previousID: UInt64?
    private var pending: [UInt8] = []
    private var start = 0

    public init(version: MoqtVersion) { self.version = version }

    /// Bytes held for an incomplete header or object.
    public var buffered: Int { pending.count - start }

    /// Feeds received bytes; returns the events they completed. At `fin`, a partial header or object
    /// is an error. An object is decoded once all its bytes are here; until then only its header
    /// fields are looked at (no copy), and a declared size over the limits fails at once.
    public mutating func feed(_ bytes: [UInt8], fin: Bool = false) throws(DecodeError) -> [Event] {
        if start > 0 && start >= pending.count / 2 {
            pending.removeFirst(start)
            start = 0
        }
        pending.append(contentsOf: bytes)
        var events: [Event] = []
        while start < pending.count {
            if let header {
                guard let size = try objectSize(header: header) else { break }
                var r = WireReader(Bytes(pending[start..<start + size]))
                events.append(.object(try readObject(&r, header: header)))
                start += size
            } else {
                // A header is at most a type, three varints and a byte: look at that much.
                var r = WireReader(Bytes(pending[start..<Swift.min(pending.count, start + 34)]))
                do {
                    let type = try r.readVarInt()
                    let h = try SubgroupHeader.decode(type: type, from: &r, version: version)
                    header = h
                    events.append(.header(h))
                    start += r.position
                } catch .short {
                    break
                }
            }
        }
        if fin, start < pending.count || header == nil { throw .truncated }
        return events
    }

    /// A varint at `offset` of the pending bytes, without copying; nil when incomplete.
    private func peekVarInt(at offset: Int) -> (value: UInt64, end: Int)? {
        VarInt.peek(pending, at: offset).map { ($0.value, offset + $0.length) }
    }

    /// The size of the next object when all of it is here, nil while incomplete.
    private func objectSize(header: SubgroupHeader) throws(DecodeError) -> Int? {
        guard var offset = peekVarInt(at: start)?.end else { return nil }
        if header.hasExtensions {
            guard let (length, end) = peekVarInt(at: offset) else { return nil }
            guard length <= UInt64(MoqtLimits.maxObjectExtensions) else {
                throw .tooLarge(size: length, limit: MoqtLimits.maxObjectExtensions)
            }
            offset = end + Int(length)
        }
        guard let (length, end) = peekVarInt(at: offset) else { return nil }
        guard length <= UInt64(MoqtLimits.maxObjectPayload) else {
            throw .tooLarge(size: length, limit: MoqtLimits.maxObjectPayload)
        }
        offset = end
        if length == 0 {
            guard let (_, statusEnd) = peekVarInt(at: offset) else { return nil }
            offset = statusEnd
        }
        offset += Int(length)
        return offset <= pending.count ? offset - start : nil
    }

    private mutating func readObject(_ r: inout WireReader, header: SubgroupHeader) throws(DecodeError)
        -> SubgroupObject
    {
        let delta = try r.readVarInt()
        var extensions = KeyValuePairs()
        if header.hasExtensions {
            let length = try r.readLength(limit: MoqtLimits.maxObjectExtensions)
            var ext = WireReader(try r.readBytes(count: length))
            extensions = try KeyValuePairs.decode(from: &ext, version: version, counted: false)
        }
        let length = try r.readLength(limit: MoqtLimits.maxObjectPayload)
        var status = ObjectStatus.normal
        if length == 0 {
            let raw = try r.readVarInt()
            guard let s = ObjectStatus(rawValue: raw), !(s == .doesNotExist && version == .draft16) else {
                throw .invalidValue("object status \(raw)")
            }
            status = s
        }
        let payload = try r.readBytes(count: length)
        let id: UInt64
        if let previousID {
            let (next, o1) = previousID.addingReportingOverflow(delta)
            let (plusOne, o2) = next.addingReportingOverflow(1)
            guard !o1, !o2, plusOne <= VarInt.max else { throw .invalidValue("object id past 2^62-1") }
            id = plusOne
        } else {
            id = delta
        }
        previousID = id
        return SubgroupObject(id: id, extensions: extensions, payload: Bytes(payload.array), status: status)
    }
}
