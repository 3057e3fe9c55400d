// SPDX-License-Identifier: MIT

/// Why bytes could not be decoded. Every case maps to a protocol error code
/// (see ``DecodeError/streamCode``).
public enum DecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// More bytes are needed; not an error once the stream has more data.
    case short
    /// A message body had bytes left over after its last field.
    case trailingBytes(Int)
    /// A declared size exceeds the limit for its kind (checked before buffering).
    case tooLarge(size: UInt64, limit: Int)
    /// A stream, message or parameter type that this version does not define.
    case unknownType(UInt64)
    /// A string was not valid UTF-8.
    case invalidString
    /// A field had a value outside its range.
    case invalidValue(String)
    /// A list held more entries than its limit.
    case tooMany(String, limit: Int)
    /// A parameter or identifier appeared twice where it must be unique.
    case duplicate(UInt64)
    /// The stream ended in the middle of a message.
    case truncated

    public var description: String {
        switch self {
        case .short: "need more bytes"
        case .trailingBytes(let n): "\(n) trailing bytes after the message"
        case .tooLarge(let size, let limit): "size \(size) exceeds the limit of \(limit) bytes"
        case .unknownType(let t): "unknown type 0x\(String(t, radix: 16))"
        case .invalidString: "string is not valid UTF-8"
        case .invalidValue(let what): "invalid value: \(what)"
        case .tooMany(let what, let limit): "too many \(what) (limit \(limit))"
        case .duplicate(let id): "duplicate identifier 0x\(String(id, radix: 16))"
        case .truncated: "stream ended inside a message"
        }
    }
}
