// SPDX-License-Identifier: MIT
public import MoqBase
public import MoqWire

/// Key-value pairs: setup parameters, message parameters and extension headers
/// (docs/ietf/moqt-wire.md §1). An even key carries one varint, an odd key a length and bytes.
/// Draft-14 writes each key absolute; draft-16 writes them sorted, each as the delta from the
/// previous one.
///
/// Decoding keeps every pair in wire order (duplicates included: messages that know a key refuse
/// its duplicates, unknown ones pass through); encoding writes them in order for draft-14 and
/// sorted for draft-16.
public struct KeyValuePairs: Sendable, Equatable {
    /// A pair's value.
    public enum Value: Sendable, Equatable {
        /// The value of an even key.
        case varint(UInt64)
        /// The value of an odd key.
        case bytes(Bytes)
    }

    /// One pair.
    public struct Pair: Sendable, Equatable {
        public var key: UInt64
        public var value: Value

        /// A pair; use an even key for a varint value and an odd key for bytes (the wire decides the
        /// kind by the key's parity, so a mismatched pair is written as the key's kind would read it:
        /// a varint under an odd key as its encoded bytes, bytes under an even key as their count).
        public init(_ key: UInt64, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// The pairs, in wire order.
    public var pairs: [Pair]

    /// Pairs in this order.
    public init(_ pairs: [Pair] = []) { self.pairs = pairs }

    /// No pairs.
    public var isEmpty: Bool { pairs.isEmpty }

    /// The first value under `key`.
    public subscript(key: UInt64) -> Value? { pairs.first { $0.key == key }?.value }

    /// The first varint under an even `key`.
    public func varint(_ key: UInt64) -> UInt64? {
        if case .varint(let v)? = self[key] { return v }
        return nil
    }

    /// The first bytes under an odd `key`.
    public func bytes(_ key: UInt64) -> Bytes? {
        if case .bytes(let b)? = self[key] { return b }
        return nil
    }

    /// Replaces every pair under `key` with one.
    public mutating func set(_ key: UInt64, _ value: Value) {
        pairs.removeAll { $0.key == key }
        pairs.append(Pair(key, value))
    }

    /// The first key among `keys` that appears more than once.
    public func duplicate(among keys: Set<UInt64>) -> UInt64? {
        var seen = Set<UInt64>()
        for pair in pairs where keys.contains(pair.key) {
            if !seen.insert(pair.key).inserted { return pair.key }
        }
        return nil
    }

    /// The first key not in `allowed`.
    public func unknownKey(allowed: Set<UInt64>) -> UInt64? { pairs.first { !allowed.contains($0.key) }?.key }

    // MARK: Encoding

    /// Writes the pairs, preceded by their count unless `counted` is false (draft-16 track
    /// extensions run to the end of their message).
    public func encode(into w: inout WireWriter, version: MoqtVersion, counted: Bool = true) {
        let ordered =
            version.deltaKeys
            ? pairs.enumerated().sorted { ($0.element.key, $0.offset) < ($1.element.key, $1.offset) }.map(\.element)
            : pairs
        if counted { w.writeVarInt(UInt64(ordered.count)) }
        var previous: UInt64 = 0
        for pair in ordered {
            w.writeVarInt(version.deltaKeys ? pair.key - previous : pair.key)
            previous = pair.key
            Self.write(pair, into: &w)
        }
    }

    private static func write(_ pair: Pair, into w: inout WireWriter) {
        if pair.key & 1 == 0 {
            switch pair.value {
            case .varint(let v): w.writeVarInt(v)
            case .bytes(let b): w.writeVarInt(UInt64(b.count))
            }
        } else {
            switch pair.value {
            case .bytes(let b):
                w.writeVarInt(UInt64(b.count))
                w.writeBytes(b)
            case .varint(let v):
                var inner = WireWriter()
                inner.writeVarInt(v)
                w.writeVarInt(UInt64(inner.bytes.count))
                w.writeBytes(inner.bytes)
            }
        }
    }

    // MARK: Decoding

    /// Reads `count` pairs (or, when `counted` is false, pairs up to the end of `r`).
    ///
    /// - Throws: ``DecodeError/tooMany(_:limit:)`` beyond ``MoqtLimits/maxParameters``,
    ///   ``DecodeError/tooLarge(size:limit:)`` for a value over ``MoqtLimits/maxParameterValue``,
    ///   ``DecodeError/invalidValue(_:)`` when a draft-16 key passes the varint ceiling.
    public static func decode(
        from r: inout WireReader, version: MoqtVersion, counted: Bool = true
    ) throws(DecodeError) -> KeyValuePairs {
        var pairs: [Pair] = []
        let count: UInt64? = counted ? try r.readVarInt() : nil
        if let count, count > UInt64(MoqtLimits.maxParameters) {
            throw .tooMany("parameters", limit: MoqtLimits.maxParameters)
        }
        var key: UInt64 = 0
        while count.map({ UInt64(pairs.count) < $0 }) ?? !r.isAtEnd {
            guard pairs.count < MoqtLimits.maxParameters else {
                throw .tooMany("parameters", limit: MoqtLimits.maxParameters)
            }
            let raw = try r.readVarInt()
            if version.deltaKeys {
                let (sum, overflow) = key.addingReportingOverflow(raw)
                guard !overflow, sum <= VarInt.max else { throw .invalidValue("parameter type past 2^62-1") }
                key = sum
            } else {
                key = raw
            }
            if key & 1 == 0 {
                pairs.append(Pair(key, .varint(try r.readVarInt())))
            } else {
                pairs.append(Pair(key, .bytes(try r.readLengthPrefixedBytes(limit: MoqtLimits.maxParameterValue))))
            }
        }
        return KeyValuePairs(pairs)
    }
}
