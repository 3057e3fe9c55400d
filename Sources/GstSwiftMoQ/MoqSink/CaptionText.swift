// SPDX-License-Identifier: MIT

/// The text of a `text/x-raw` buffer as a WebVTT cue's: UTF-8 checked, a trailing NUL (C strings)
/// dropped, and Pango markup (`format=pango-markup`, what subparse and most text sources emit)
/// reduced to the tags WebVTT shares with it (`<b>`, `<i>`, `<u>`); entities stay as they are
/// (both escape `&`, `<` and `>` alike).
enum CaptionText {
    /// What is wrong with a buffer.
    enum Problem: Error, CustomStringConvertible {
        case notUTF8
        case tooLarge(Int)

        var description: String {
            switch self {
            case .notUTF8: "not UTF-8 text"
            case .tooLarge(let n): "\(n) bytes of text in one cue (the limit is \(CaptionText.maxBytes))"
            }
        }
    }

    /// The longest cue published (bytes): a caption is a few lines; more is a wrong input.
    static let maxBytes = 16_384

    /// The cue text of `bytes`.
    static func cue(_ bytes: UnsafeRawBufferPointer, markup: Bool) -> Result<String, Problem> {
        var count = bytes.count
        while count > 0, bytes[count - 1] == 0 { count -= 1 }
        guard count <= maxBytes else { return .failure(.tooLarge(count)) }
        guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[0..<count]), as: UTF8.self)
        else { return .failure(.notUTF8) }
        return .success(markup ? webVTT(fromPango: text) : text)
    }

    /// Pango markup with only `<b>`, `<i>` and `<u>` (opening and closing) kept.
    static func webVTT(fromPango text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "<") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: ">") else {
                // An unterminated tag is not markup: keep it as text, escaped.
                out += "&lt;" + rest[rest.index(after: open)...]
                return out
            }
            let tag = rest[rest.index(after: open)..<close]
            let name = tag.drop { $0 == "/" }.prefix { $0.isLetter }.lowercased()
            if ["b", "i", "u"].contains(name), tag.count == name.count + (tag.hasPrefix("/") ? 1 : 0) {
                out += "<" + tag.lowercased() + ">"
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }
}
