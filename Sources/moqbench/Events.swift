// SPDX-License-Identifier: MIT
import Foundation
import MoqCatalog
import MoqSync

/// A JSON value of an event field.
enum JSONField: Sendable {
    case int(Int)
    case double(Double)
    case string(String)
    case bool(Bool)
    case ints([Int])
    case doubles([Double])
    case strings([String])

    var rendered: String {
        switch self {
        case .int(let v): String(v)
        case .double(let v): v.isFinite ? String(v) : "null"
        case .bool(let v): v ? "true" : "false"
        case .ints(let vs): "[" + vs.map(String.init).joined(separator: ",") + "]"
        case .doubles(let vs): "[" + vs.map { JSONField.double($0).rendered }.joined(separator: ",") + "]"
        case .string(let s): JSONValue.string(s).jsonString
        case .strings(let ss): "[" + ss.map { JSONValue.string($0).jsonString }.joined(separator: ",") + "]"
        }
    }
}

/// Event lines on standard output: one JSON object per line, written whole and flushed at once.
enum Events {
    private static let lock = Lock(())

    /// Writes `{"event": name, …fields}`.
    static func emit(_ name: String, _ fields: KeyValuePairs<String, JSONField> = [:]) {
        emit(name, fields: fields.map { ($0.key, $0.value) })
    }

    /// Writes `{"event": name, …fields}` (keys are written as given: plain identifiers).
    static func emit(_ name: String, fields: [(String, JSONField)]) {
        var line = "{\"event\":\"\(name)\""
        for (key, value) in fields { line += ",\"\(key)\":\(value.rendered)" }
        line += "}\n"
        let bytes = Array(line.utf8)
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(1, raw.baseAddress! + offset, raw.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
        }
    }

    /// A line on standard error (logs, never parsed).
    static func log(_ text: String) {
        FileHandle.standardError.write(Data("[moqbench \(getpid())] \(text)\n".utf8))
    }
}
