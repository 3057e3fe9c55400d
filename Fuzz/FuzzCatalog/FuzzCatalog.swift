// SPDX-License-Identifier: MIT
// libFuzzer target over the hang catalog decoder and the legacy frame container.
// Linked by `make fuzz` with MoqWire and MoqCatalog built as instrumented modules (`-enable-testing`:
// the CMAF track's initializer is internal).
//
// The whole input is tried as a catalog document and as a legacy frame. Decoding may
// fail with a typed error (expected); it must never crash, hang or exceed its bounds.
// A catalog that decodes must re-encode to JSON that decodes to the same catalog
// (minus the renditions reported as issues, which are not republished), and
// encoding must be stable after one round.
import MoqWire

@testable import MoqCatalog

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

    // CMAF init segments and fragments (a catalog's `container.init`, a cmaf track's frames) come
    // from peers too: reading them throws or yields samples within the bytes, never traps.
    let bytes = Bytes(copying: input)
    if let cmaf = try? CMAFInit(bytes) {
        for track in cmaf.tracks {
            let own = cmaf.segment(forTrack: track.trackID)
            precondition(own.flatMap { try? CMAFInit($0) }?.tracks == [track], "per-track init round trip")
            _ = track.opusHead
            _ = track.audioSpecificConfig
        }
    }
    let anyTrack = CMAFTrack(
        trackID: 1, timescale: 90_000, handler: "vide", sampleEntry: "avc1", configuration: nil, defaultSampleSize: 7)
    var decodeTimes: [UInt32: UInt64] = [:]
    if let samples = try? CMAFFragment.samples(in: bytes, tracks: [anyTrack], nextDecodeTime: &decodeTimes) {
        for sample in samples {
            precondition(sample.data.count <= bytes.count, "a sample larger than the fragment")
            var again: [UInt32: UInt64] = [:]
            let fragment = CMAFFragment.fragment(sample, sequence: 1)
            let reread = try? CMAFFragment.samples(in: fragment, tracks: [anyTrack], nextDecodeTime: &again)
            if Int32(exactly: sample.compositionOffset) != nil {
                precondition(reread == [sample], "one-sample fragment round trip")
            }
            _ = sample.presentationMicros(timescale: anyTrack.timescale)
        }
    }

    if let frame = try? LegacyFrame(decoding: bytes) {
        precondition(frame.payload.count < bytes.count, "payload includes the timestamp")
        let encoded = try? frame.encoded()
        let decoded = encoded.flatMap { try? LegacyFrame(decoding: $0) }
        precondition(decoded == frame, "legacy frame round trip")
    }
    return 0
}
