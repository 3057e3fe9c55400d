// SPDX-License-Identifier: MIT
public import MoqBase
public import MoqWire

/// One object on a fetch stream (docs/ietf/moqt-wire.md §7.3): unlike a subgroup stream's, each
/// names its group, subgroup and priority.
public struct FetchObject: Sendable, Equatable {
    public var group: UInt64
    public var subgroup: UInt64
    public var id: UInt64
    public var publisherPriority: UInt8
    public var extensions: KeyValuePairs
    public var payload: Bytes
    /// Draft-14 only (an empty object's status); draft-16's fetch objects carry none.
    public var status: ObjectStatus

    public init(
        group: UInt64, subgroup: UInt64 = 0, id: UInt64, publisherPriority: UInt8 = 0,
        extensions: KeyValuePairs = KeyValuePairs(), payload: Bytes, status: ObjectStatus = .normal
    ) {
        self.group = group
        self.subgroup = subgroup
        self.id = id
        self.publisherPriority = publisherPriority
        self.extensions = extensions
        self.payload = payload
        self.status = status
    }

    /// Writes the object. Draft-16's serialization flags name every field (nothing refers to the
    /// object before it), which every reader takes.
    public func encode(into w: inout WireWriter, version: MoqtVersion) {
        var ext = WireWriter()
        if !extensions.isEmpty { extensions.encode(into: &ext, version: version, counted: false) }
        switch version {
        case .draft14:
            w.writeVarInt(group)
            w.writeVarInt(subgroup)
            w.writeVarInt(id)
            w.writeUInt8(publisherPriority)
            w.writeVarInt(UInt64(ext.bytes.count))
            w.writeBytes(ext.bytes)
            w.writeVarInt(UInt64(payload.count))
            if payload.count == 0 { w.writeVarInt(status.rawValue) }
        case .draft16:
            var flags: UInt64 = 0x04 | 0x08 | 0x10
            if subgroup != 0 { flags |= 0x03 }
            if !extensions.isEmpty { flags |= 0x20 }
            w.writeVarInt(flags)
            w.writeVarInt(group)
            if subgroup != 0 { w.writeVarInt(subgroup) }
            w.writeVarInt(id)
            w.writeUInt8(publisherPriority)
            if !extensions.isEmpty {
                w.writeVarInt(UInt64(ext.bytes.count))
                w.writeBytes(ext.bytes)
            }
            w.writeVarInt(UInt64(payload.count))
        }
        w.writeBytes(payload)
    }
}

/// The fetch stream's header: `0x05 | request id`.
public enum FetchHeader {
    public static let streamType: UInt64 = 0x05

    public static func encode(requestID: UInt64, into w: inout WireWriter) {
        w.writeVarInt(streamType)
        w.writeVarInt(requestID)
    }
}

/// Decodes a fetch stream as its bytes arrive: the header's request id, then each object once all
/// its bytes are here (payload and extensions bounded by ``MoqtLimits``). Draft-16's serialization
/// flags may refer to the object before; on the first object that is a protocol violation.
public struct FetchStreamDecoder: Sendable {
    /// What the stream has yielded so far.
    public enum Event: Sendable, Equatable {
        case header(requestID: UInt64)
        case object(FetchObject)
        /// Draft-16: the objects up to this location (inclusive) do not exist (`known`) or are unknown.
        case endOfRange(Location, known: Bool)
    }

    public let version: MoqtVersion
    public private(set) var requestID: UInt64?
    private var previous: FetchObject?
    private var pending: [UInt8] = []
    private var start = 0

    public init(version: MoqtVersion) { self.version = version }

    /// Bytes held for an incomplete header or object.
    public var buffered: Int { pending.count - start }

    /// Feeds received bytes; returns the events they completed. At `fin`, a partial header or object
    /// is an error. A declared size over the limits fails as soon as it is read.
    public mutating func feed(_ bytes: [UInt8], fin: Bool = false) throws(DecodeError) -> [Event] {
        if start > 0 && start >= pending.count / 2 {
            pending.removeFirst(start)
            start = 0
        }
        pending.append(contentsOf: bytes)
        var events: [Event] = []
        while start < pending.count {
            if requestID == nil {
                // The header is two varints: look at that much.
                var r = WireReader(Bytes(pending[start..<Swift.min(pending.count, start + 16)]))
                do throws(DecodeError) {
                    let type = try r.readVarInt()
                    guard type == FetchHeader.streamType else { throw .unknownType(type) }
                    let id = try r.readVarInt()
                    requestID = id
                    events.append(.header(requestID: id))
                    start += r.position
                } catch .short {
                    break
                }
            } else {
                // An object is copied once all of it is here: until then only its fields are looked at.
                guard let size = try objectSize() else { break }
                var r = WireReader(Bytes(pending[start..<start + size]))
                events.append(try readObject(&r))
                start += size
            }
        }
        if fin, start < pending.count || requestID == nil { throw .truncated }
        return events
    }

    /// The size of the next object when all of it is here, nil while incomplete; a declared length
    /// over the limits fails at once.
    private func objectSize() throws(DecodeError) -> Int? {
        var offset = start
        func varint() -> UInt64? {
            guard let (value, length) = VarInt.peek(pending, at: offset) else { return nil }
            offset += length
            return value
        }
        func length(limit: Int) throws(DecodeError) -> Int? {
            guard let value = varint() else { return nil }
            guard value <= UInt64(limit) else { throw .tooLarge(size: value, limit: limit) }
            offset += Int(value)
            return Int(value)
        }
        switch version {
        case .draft14:
            guard varint() != nil, varint() != nil, varint() != nil else { return nil }
            offset += 1  // publisher priority
            guard try length(limit: MoqtLimits.maxObjectExtensions) != nil,
                let payload = try length(limit: MoqtLimits.maxObjectPayload)
            else { return nil }
            if payload == 0, varint() == nil { return nil }  // the status
        case .draft16:
            guard let flags = varint() else { return nil }
            if flags == 0x8C || flags == 0x10C {
                guard varint() != nil, varint() != nil else { return nil }
                return offset <= pending.count ? offset - start : nil
            }
            guard flags < 0x80 else {
                throw .invalidValue("fetch serialization flags 0x\(String(flags, radix: 16))")
            }
            if flags & 0x08 != 0, varint() == nil { return nil }
            if flags & 0x40 == 0, flags & 0x03 == 0x03, varint() == nil { return nil }
            if flags & 0x04 != 0, varint() == nil { return nil }
            if flags & 0x10 != 0 { offset += 1 }
            if flags & 0x20 != 0, try length(limit: MoqtLimits.maxObjectExtensions) == nil { return nil }
            guard try length(limit: MoqtLimits.maxObjectPayload) != nil else { return nil }
        }
        return offset <= pending.count ? offset - start : nil
    }

    private mutating func readObject(_ r: inout WireReader) throws(DecodeError) -> Event {
        switch version {
        case .draft14: return .object(try readDraft14(&r))
        case .draft16: return try readDraft16(&r)
        }
    }

    private func readDraft14(_ r: inout WireReader) throws(DecodeError) -> FetchObject {
        let group = try r.readVarInt()
        let subgroup = try r.readVarInt()
        let id = try r.readVarInt()
        let priority = try r.readUInt8()
        let extensions = try Self.readExtensions(&r, version: version)
        let length = try r.readLength(limit: MoqtLimits.maxObjectPayload)
        var status = ObjectStatus.normal
        if length == 0 {
            let raw = try r.readVarInt()
            guard let s = ObjectStatus(rawValue: raw) else { throw .invalidValue("object status \(raw)") }
            status = s
        }
        return FetchObject(
            group: group, subgroup: subgroup, id: id, publisherPriority: priority, extensions: extensions,
            payload: Bytes(try r.readBytes(count: length).array), status: status)
    }

    private mutating func readDraft16(_ r: inout WireReader) throws(DecodeError) -> Event {
        let flags = try r.readVarInt()
        if flags == 0x8C || flags == 0x10C {
            let end = Location(group: try r.readVarInt(), object: try r.readVarInt())
            return .endOfRange(end, known: flags == 0x8C)
        }
        let refersBack = flags & 0x1C != 0x1C || (flags & 0x40 == 0 && (flags & 0x03 == 1 || flags & 0x03 == 2))
        if refersBack, previous == nil {
            throw .invalidValue(
                "the first fetch object refers to the one before it (flags 0x\(String(flags, radix: 16)))")
        }
        let group = flags & 0x08 != 0 ? try r.readVarInt() : previous?.group ?? 0
        var subgroup: UInt64 = 0
        if flags & 0x40 == 0 {
            switch flags & 0x03 {
            case 0: subgroup = 0
            case 1: subgroup = previous?.subgroup ?? 0
            case 2: subgroup = try Self.next(previous?.subgroup ?? 0, "subgroup")
            default: subgroup = try r.readVarInt()
            }
        }
        let id = flags & 0x04 != 0 ? try r.readVarInt() : try Self.next(previous?.id ?? 0, "object id")
        let priority = flags & 0x10 != 0 ? try r.readUInt8() : previous?.publisherPriority ?? 0
        let extensions = flags & 0x20 != 0 ? try Self.readExtensions(&r, version: version) : KeyValuePairs()
        let length = try r.readLength(limit: MoqtLimits.maxObjectPayload)
        let object = FetchObject(
            group: group, subgroup: subgroup, id: id, publisherPriority: priority, extensions: extensions,
            payload: Bytes(try r.readBytes(count: length).array))
        previous = object
        return .object(object)
    }

    private static func next(_ value: UInt64, _ what: String) throws(DecodeError) -> UInt64 {
        guard value < VarInt.max else { throw .invalidValue("\(what) past 2^62-1") }
        return value + 1
    }

    private static func readExtensions(_ r: inout WireReader, version: MoqtVersion) throws(DecodeError)
        -> KeyValuePairs
    {
        let length = try r.readLength(limit: MoqtLimits.maxObjectExtensions)
        var ext = WireReader(try r.readBytes(count: length))
        return try KeyValuePairs.decode(from: &ext, version: version, counted: false)
    }
}
