// SPDX-License-Identifier: MIT
import MoqWire

/// Parses "01 0e 02…" (spaces and ASCII in quotes allowed: `"demo"`).
func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var digits = ""
    var inQuote = false
    for ch in text {
        if ch == "\"" {
            inQuote.toggle()
            continue
        }
        if inQuote {
            out.append(contentsOf: Array(String(ch).utf8))
            continue
        }
        if ch.isHexDigit { digits.append(ch) }
        if digits.count == 2 {
            out.append(UInt8(digits, radix: 16)!)
            digits = ""
        }
    }
    precondition(digits.isEmpty, "odd hex digits in \(text)")
    return out
}

func reader(_ bytes: [UInt8]) -> WireReader { WireReader(Bytes(bytes)) }
