// SPDX-License-Identifier: MIT

/// One header or trailer field.
public struct HTTPField: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }
}

/// QPACK (RFC 9204) with the static table and literals only: this side advertises a dynamic table
/// capacity of 0, so a field section must have a Required Insert Count of 0 and may not reference
/// the dynamic table; Huffman-coded strings are decoded (peers use them) and produced when shorter.
public enum QPACK {
    /// Why a field section was refused (the connection error is QPACK_DECOMPRESSION_FAILED).
    public enum DecodeError: Error, Equatable, CustomStringConvertible {
        case truncated
        case integerOverflow
        case dynamicTableReference
        case staticIndexOutOfRange(UInt64)
        case invalidHuffman
        case tooLarge

        public var description: String {
            switch self {
            case .truncated: "field section truncated"
            case .integerOverflow: "integer too large"
            case .dynamicTableReference: "reference to the dynamic table (its capacity is 0)"
            case .staticIndexOutOfRange(let i): "static table index \(i) out of range"
            case .invalidHuffman: "invalid Huffman string"
            case .tooLarge: "field section larger than allowed"
            }
        }
    }

    /// The most fields and bytes (names and values, decoded) a field section may carry.
    public static let maxFields = 64
    public static let maxSectionBytes = 16 * 1024

    // MARK: Encoding

    /// Encodes `fields` as a field section (prefix 0, 0: no dynamic table).
    public static func encode(_ fields: [HTTPField]) -> [UInt8] {
        var out: [UInt8] = [0, 0]
        for field in fields {
            if let index = QPACKStaticTable.index(name: field.name, value: field.value) {
                // Indexed field line, static: 1 T=1 index(6).
                encodeInteger(UInt64(index), prefixBits: 6, flags: 0b1100_0000, into: &out)
            } else if let nameIndex = QPACKStaticTable.index(name: field.name) {
                // Literal with name reference, static: 0 1 N=0 T=1 index(4), then the value.
                encodeInteger(UInt64(nameIndex), prefixBits: 4, flags: 0b0101_0000, into: &out)
                encodeString(Array(field.value.utf8), prefixBits: 7, huffmanFlag: 0b1000_0000, into: &out)
            } else {
                // Literal with literal name: 0 0 1 N=0 H name(3), then the value.
                encodeString(
                    Array(field.name.utf8), prefixBits: 3, huffmanFlag: 0b0000_1000, flags: 0b0010_0000, into: &out)
                encodeString(Array(field.value.utf8), prefixBits: 7, huffmanFlag: 0b1000_0000, into: &out)
            }
        }
        return out
    }

    /// An N-bit prefix integer (RFC 7541 §5.1) with `flags` in the bits above the prefix.
    static func encodeInteger(_ value: UInt64, prefixBits: Int, flags: UInt8, into out: inout [UInt8]) {
        let max = UInt64(1) << UInt64(prefixBits) - 1
        if value < max {
            out.append(flags | UInt8(value))
            return
        }
        out.append(flags | UInt8(max))
        var rest = value - max
        while rest >= 128 {
            out.append(UInt8(rest & 0x7f) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    /// A string literal: Huffman-coded when that is shorter.
    private static func encodeString(
        _ bytes: [UInt8], prefixBits: Int, huffmanFlag: UInt8, flags: UInt8 = 0, into out: inout [UInt8]
    ) {
        let huffmanCount = Huffman.encodedCount(bytes)
        if huffmanCount < bytes.count {
            encodeInteger(UInt64(huffmanCount), prefixBits: prefixBits, flags: flags | huffmanFlag, into: &out)
            out += Huffman.encode(bytes)
        } else {
            encodeInteger(UInt64(bytes.count), prefixBits: prefixBits, flags: flags, into: &out)
            out += bytes
        }
    }

    // MARK: Decoding

    /// Decodes a field section.
    public static func decode(_ section: [UInt8]) throws(DecodeError) -> [HTTPField] {
        var reader = Reader(bytes: section)
        // Required Insert Count (8-bit prefix) must be 0; the Delta Base is then meaningless.
        guard try reader.integer(prefixBits: 8) == 0 else { throw .dynamicTableReference }
        _ = try reader.integer(prefixBits: 7)
        var fields: [HTTPField] = []
        var total = 0
        while !reader.isAtEnd {
            guard fields.count < maxFields else { throw .tooLarge }
            let first = try reader.peek()
            let field: HTTPField
            if first & 0b1000_0000 != 0 {
                // Indexed field line: 1 T index(6).
                guard first & 0b0100_0000 != 0 else { throw .dynamicTableReference }
                let entry = try staticEntry(reader.integer(prefixBits: 6))
                field = HTTPField(entry.name, entry.value)
            } else if first & 0b0100_0000 != 0 {
                // Literal with name reference: 0 1 N T index(4).
                guard first & 0b0001_0000 != 0 else { throw .dynamicTableReference }
                let entry = try staticEntry(reader.integer(prefixBits: 4))
                field = HTTPField(entry.name, try reader.string(prefixBits: 7, limit: maxSectionBytes - total))
            } else if first & 0b0010_0000 != 0 {
                // Literal with literal name: 0 0 1 N H length(3).
                let name = try reader.string(prefixBits: 3, limit: maxSectionBytes - total)
                field = HTTPField(
                    name, try reader.string(prefixBits: 7, limit: maxSectionBytes - total - name.utf8.count))
            } else {
                // Post-base forms (0001…, 0000…) index the dynamic table.
                throw .dynamicTableReference
            }
            total += field.name.utf8.count + field.value.utf8.count
            guard total <= maxSectionBytes else { throw .tooLarge }
            fields.append(field)
        }
        return fields
    }

    private static func staticEntry(_ index: UInt64) throws(DecodeError) -> (name: String, value: String) {
        guard index < UInt64(QPACKStaticTable.entries.count) else { throw .staticIndexOutOfRange(index) }
        return QPACKStaticTable.entries[Int(index)]
    }

    /// Reads prefix integers and string literals from a field section.
    struct Reader {
        let bytes: [UInt8]
        var position = 0

        var isAtEnd: Bool { position >= bytes.count }

        func peek() throws(DecodeError) -> UInt8 {
            guard position < bytes.count else { throw .truncated }
            return bytes[position]
        }

        /// An N-bit prefix integer (the bits above the prefix belong to the caller), at most 2^32.
        mutating func integer(prefixBits: Int) throws(DecodeError) -> UInt64 {
            guard position < bytes.count else { throw .truncated }
            let max = UInt64(1) << UInt64(prefixBits) - 1
            var value = UInt64(bytes[position]) & max
            position += 1
            guard value == max else { return value }
            var shift: UInt64 = 0
            while true {
                guard position < bytes.count else { throw .truncated }
                let byte = bytes[position]
                position += 1
                value += UInt64(byte & 0x7f) << shift
                guard value <= UInt64(UInt32.max) else { throw .integerOverflow }
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }

        /// A string literal whose H bit sits just above the `prefixBits`-bit length.
        mutating func string(prefixBits: Int, limit: Int) throws(DecodeError) -> String {
            let huffman = try peek() & (UInt8(1) << UInt8(prefixBits)) != 0
            let length = try integer(prefixBits: prefixBits)
            guard length <= UInt64(bytes.count - position) else { throw .truncated }
            let raw = bytes[position..<position + Int(length)]
            position += Int(length)
            if huffman {
                do {
                    return String(decoding: try Huffman.decode(raw, limit: max(0, limit)), as: UTF8.self)
                } catch .tooLong {
                    throw .tooLarge
                } catch {
                    throw .invalidHuffman
                }
            }
            guard raw.count <= limit else { throw .tooLarge }
            return String(decoding: raw, as: UTF8.self)
        }
    }
}
