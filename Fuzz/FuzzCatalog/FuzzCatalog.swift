// SPDX-License-Identifier: MIT
// libFuzzer target over the hang catalog decoder and the legacy frame container.
// Built together with the MoqWire and MoqCatalog sources (one module) by `make fuzz`:
//   swiftc -sanitize=fuzzer,address -parse-as-library \
//       Sources/MoqWire/*.swift Sources/MoqCatalog/*.swift Fuzz/FuzzCatalog/FuzzCatalog.swift
//
// The whole input is tried as a catalog document and as a legacy frame. Decoding may
// fail with a typed error (expected); it must never crash, hang or exceed its bounds.
// A catalog that decodes must re-encode to JSON that decodes to the same catalog
// (minus the renditions reported as issues, which are not republished), and
// encoding must be stable after one round.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCatalog(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)

    if let value = try? JSONValue(parsing: input) {
        let text = value.jsonString
        let again = try? JSONValue(parsing: Array(text.utf8))
        precondition(again == value, "JSON value round trip")
    }

    if let catalog = try? HangCatalog(json: input) {
        let first = catalog.jsonBytes()
        guard let again = try? HangCatalog(json: first) else {
            preconditionFailure("re-encoded catalog does not decode: \(String(decoding: first, as: UTF8.self))")
        }
        precondition(again.issues.isEmpty, "re-encoded catalog has issues: \(again.issues)")
        precondition(again.video == catalog.video, "video section round trip")
        precondition(again.audio == catalog.audio, "audio section round trip")
        precondition(again.extra == catalog.extra, "root extras round trip")
        precondition(again.jsonBytes() == first, "encoding is not stable")
        precondition(catalog.renditions.count == catalog.video.renditions.count + catalog.audio.renditions.count)
    }

    // The now-playing track's frames, and SwiftMoQ's catalog member, come from peers too.
    if let now = try? NowPlaying(json: input) {
        precondition((try? NowPlaying(json: now.jsonBytes())) == now, "now-playing round trip")
    }
    if let catalog = try? HangCatalog(json: input) {
        let member = SwiftMoQExtension(catalog: catalog)
        var written = HangCatalog()
        member.write(into: &written)
        precondition(SwiftMoQExtension(catalog: written) == member, "swiftmoq member round trip")
    }

    let bytes = Bytes(copying: input)
    if let frame = try? LegacyFrame(decoding: bytes) {
        precondition(frame.payload.count < bytes.count, "payload includes the timestamp")
        let encoded = try? frame.encoded()
        let decoded = encoded.flatMap { try? LegacyFrame(decoding: $0) }
        precondition(decoded == frame, "legacy frame round trip")
    }
    return 0
}
