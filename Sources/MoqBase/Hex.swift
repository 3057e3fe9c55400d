// SPDX-License-Identifier: MIT

/// Hexadecimal, the one codec for fingerprints, catalogs, caps and logs.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lowercase hex of a byte view.
    public static func encode(_ bytes: Bytes) -> String { bytes.withUnsafeBytes { encode($0) } }

    /// Parses hex digits of either case. Returns nil on any other character or an odd count of digits.
    ///
    /// - Parameter colons: whether `:` may separate bytes (fingerprints as OpenSSL prints them).
    public static func decode(_ text: String, allowingColons colons: Bool = false) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for c in text.utf8 {
            if colons && c == UInt8(ascii: ":") { continue }
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return high == nil ? out : nil
    }
}
