// SPDX-License-Identifier: MIT
import Foundation
import MoqCatalog
import MoqTestFixtures
import MoqWire
import Testing

@Suite struct RustCatalogTests {
    @Test func avc1AndOpusFromRust() throws {
        let catalog = try HangCatalog(json: RustCatalogs.avc1Opus)
        #expect(catalog.issues.isEmpty)
        let video = try #require(catalog.video.renditions["0.avc1"])
        #expect(video.codec == "avc1.42c00d")
        #expect(
            video.description?.array
                == Hex.decode("0142c00dffe100116742c00d8c68141f26a0c020c0f08846a001000468ce3c80"))
        #expect(video.codedWidth == 320 && video.codedHeight == 240)
        #expect(video.bitrate == 88280)
        #expect(video.framerate == 30)
        #expect(video.container == .legacy)
        #expect(video.jitter == nil && video.delay == nil)
        let audio = try #require(catalog.audio.renditions["1.opus"])
        #expect(audio.codec == "opus")
        #expect(audio.sampleRate == 48000 && audio.numberOfChannels == 2)
        #expect(audio.description?.array == Hex.decode("4f707573486561640102380180bb0000000000"))
        #expect(audio.bitrate == nil)
        // Unmodelled root sections are kept, in order.
        #expect(catalog.extra.entries.map(\.key) == ["archive", "clock"])
        #expect(catalog.extra["clock"]?.jsonString == #"{"wall":218152279435821,"timescale":1000000}"#)
        // Republishing yields the Rust bytes exactly.
        #expect(catalog.jsonString() == RustCatalogs.avc1Opus)
    }

    @Test func avc3AndOpusFromRust() throws {
        let catalog = try HangCatalog(json: RustCatalogs.avc3Opus)
        #expect(catalog.issues.isEmpty)
        let video = try #require(catalog.video.renditions["0.avc3"])
        #expect(video.codec == "avc3.42c00d")
        #expect(video.description == nil)
        #expect(video.bitrate == 300_000)
        #expect(video.jitter == 426 && video.delay == 78)
        let audio = try #require(catalog.audio.renditions["audio"])
        #expect(audio.bitrate == 64000 && audio.jitter == 505 && audio.delay == 3)
        #expect(catalog.jsonString() == RustCatalogs.avc3Opus)
        #expect(catalog.renditions.map(\.name) == ["0.avc3", "audio"])
    }

    /// hang's own test vector (`rs/hang/src/catalog/root.rs`, `simple`), both directions.
    @Test func hangSimpleVector() throws {
        let json =
            #"{"video":{"renditions":{"video":{"codec":"avc1.64001f","codedWidth":1280,"codedHeight":720,"bitrate":6000000,"framerate":30.0,"container":{"kind":"legacy"}}}},"audio":{"renditions":{"audio":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"bitrate":128000,"container":{"kind":"legacy"}}}}}"#
        var built = HangCatalog()
        var video = VideoConfig(codec: "avc1.64001f")
        video.codedWidth = 1280
        video.codedHeight = 720
        video.bitrate = 6_000_000
        video.framerate = 30
        built.set("video", .video(video))
        var audio = AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)
        audio.bitrate = 128_000
        built.set("audio", .audio(audio))
        #expect(built.jsonString() == json)
        #expect(try HangCatalog(json: json) == built)
    }

    @Test func emptyCatalogEncodesBothSections() {
        #expect(HangCatalog().jsonString() == #"{"video":{"renditions":{}},"audio":{"renditions":{}}}"#)
    }
}

@Suite struct CatalogCompatibilityTests {
    @Test func unknownKeysSurviveAtEveryLevel() throws {
        let json =
            #"{"future":[1,{"x":null}],"video":{"renditions":{"v":{"codec":"vp8","container":{"kind":"legacy","hint":"a"},"timeline":{"track":"v.t","timescale":1000},"zzz":18446744073709551615}},"display":{"width":640,"height":360,"dpi":2},"rotation":90.0,"flip":false,"hdr":true},"audio":{"renditions":{},"lang":"en"},"scte35":{"splice_id":42}}"#
        let catalog = try HangCatalog(json: json)
        #expect(catalog.issues.isEmpty)
        let v = try #require(catalog.video.renditions["v"])
        #expect(v.container.kind == .legacy)
        #expect(v.container.extra["hint"] == .string("a"))
        #expect(v.extra.entries.map(\.key) == ["timeline", "zzz"])
        #expect(v.extra["zzz"]?.jsonString == "18446744073709551615")
        #expect(catalog.video.display?.width == 640)
        #expect(catalog.video.display?.extra["dpi"] != nil)
        #expect(catalog.video.rotation == 90)
        #expect(catalog.video.flip == false)
        #expect(catalog.video.extra["hdr"] == .bool(true))
        #expect(catalog.audio.extra["lang"] == .string("en"))
        #expect(catalog.extra.entries.map(\.key) == ["future", "scte35"])

        // Known fields move to their canonical order; everything unknown is still there.
        let again = try HangCatalog(json: catalog.jsonString())
        #expect(again == catalog)
        let text = catalog.jsonString()
        for fragment in [
            #""hint":"a""#, #""zzz":18446744073709551615"#, #""dpi":2"#, #""hdr":true"#, #""lang":"en""#,
            #""scte35":{"splice_id":42}"#, #""future":[1,{"x":null}]"#, #""timeline":{"track":"v.t","timescale":1000}"#,
        ] {
            #expect(text.contains(fragment), "lost \(fragment)")
        }
    }

    @Test func unknownContainerIsKeptVerbatim() throws {
        // hang's `unknown_container_keeps_siblings`.
        let json =
            #"{"video":{"renditions":{"future":{"codec":"avc1.64001f","container":{"magic":7,"kind":"future"}},"legacy":{"codec":"avc1.64001f","codedWidth":1280,"codedHeight":720,"container":{"kind":"legacy"}}}}}"#
        let catalog = try HangCatalog(json: json)
        let future = try #require(catalog.video.renditions["future"])
        #expect(future.container.kind == .unknown("future"))
        #expect(future.container.kindName == "future")
        #expect(catalog.video.renditions["legacy"]?.codedWidth == 1280)
        #expect(catalog.jsonString().contains(#""container":{"magic":7,"kind":"future"}"#))
    }

    @Test func containerWithoutUsableKindIsUnknown() throws {
        let catalog = try HangCatalog(
            json:
                #"{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":1,"container":{"kind":3}}}}}"#
        )
        #expect(catalog.audio.renditions["a"]?.container.kind == .unknown(nil))
        #expect(catalog.jsonString().contains(#""container":{"kind":3}"#))
    }

    @Test func absentContainerIsLegacy() throws {
        let catalog = try HangCatalog(json: #"{"video":{"renditions":{"v":{"codec":"vp8"}}}}"#)
        #expect(catalog.video.renditions["v"]?.container == .legacy)
        #expect(catalog.jsonString().contains(#""container":{"kind":"legacy"}"#))
    }

    @Test func cmafInitIsBase64() throws {
        let json =
            #"{"video":{"renditions":{"v":{"codec":"avc1.64001f","container":{"kind":"cmaf","init":"AAEC"}}}},"audio":{"renditions":{}}}"#
        let catalog = try HangCatalog(json: json)
        #expect(catalog.video.renditions["v"]?.container.kind == .cmaf(initSegment: [0, 1, 2]))
        #expect(catalog.jsonString() == json)
        for bad in [#"{"kind":"cmaf"}"#, #"{"kind":"cmaf","init":"AAE"}"#, #"{"kind":"cmaf","init":"AAF="}"#] {
            let c = try HangCatalog(json: #"{"video":{"renditions":{"v":{"codec":"x","container":"# + bad + "}}}}")
            #expect(c.video.renditions.isEmpty && c.issues.count == 1, "\(bad)")
        }
    }

    @Test func olderDisplayRatioKeysAreRead() throws {
        let catalog = try HangCatalog(
            json:
                #"{"video":{"renditions":{"v":{"codec":"avc1.640028","displayRatioWidth":16,"displayRatioHeight":9}}}}"#
        )
        let v = try #require(catalog.video.renditions["v"])
        #expect(v.displayAspectWidth == 16 && v.displayAspectHeight == 9)
        #expect(catalog.jsonString().contains(#""displayAspectWidth":16,"displayAspectHeight":9"#))
        #expect(!catalog.jsonString().contains("displayRatio"))
    }

    @Test func nullIsAbsentForOptionalFields() throws {
        let catalog = try HangCatalog(
            json:
                #"{"video":null,"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"bitrate":null,"description":null}}}}"#
        )
        #expect(catalog.audio.renditions["a"]?.bitrate == nil)
        #expect(catalog.audio.renditions["a"]?.description == nil)
    }

    @Test func broadcastAndStalledAreModelled() throws {
        let catalog = try HangCatalog(
            json: #"{"video":{"renditions":{"v":{"broadcast":"./source","codec":"vp8","stalled":true}}}}"#)
        let v = try #require(catalog.video.renditions["v"])
        #expect(v.broadcast == "./source" && v.stalled == true)
        #expect(catalog.jsonString().hasPrefix(#"{"video":{"renditions":{"v":{"broadcast":"./source","codec":"vp8","#))
    }

    @Test func lastDuplicateRenditionNameWins() throws {
        let catalog = try HangCatalog(
            json: #"{"video":{"renditions":{"v":{"codec":"vp8"},"v":{"codec":"vp09.00.10.08"}}}}"#)
        #expect(catalog.video.renditions["v"]?.codec == "vp09.00.10.08")
    }

    @Test func nonFiniteDoublesAreNotWritten() {
        var catalog = HangCatalog()
        var v = VideoConfig(codec: "vp8")
        v.framerate = .infinity
        catalog.set("v", .video(v))
        #expect(!catalog.jsonString().contains("framerate"))
    }
}

@Suite struct CatalogRobustnessTests {
    /// One bad rendition next to a good one: only the bad one is lost, and the error names the field.
    func isolate(_ bad: String, section: String = "video") throws -> (HangCatalog, RenditionIssue) {
        let good =
            section == "video"
            ? #""ok":{"codec":"vp8","codedWidth":1,"codedHeight":1}"#
            : #""ok":{"codec":"opus","sampleRate":48000,"numberOfChannels":2}"#
        let json = #"{"\#(section)":{"renditions":{"bad":\#(bad),\#(good)}}}"#
        let catalog = try HangCatalog(json: json)
        let issue = try #require(catalog.issues.first)
        #expect(catalog.issues.count == 1)
        #expect(issue.name == "bad")
        return (catalog, issue)
    }

    @Test func wrongTypeNamesTheField() throws {
        let (catalog, issue) = try isolate(#"{"codec":"avc1.42c00d","codedWidth":"320"}"#)
        #expect(catalog.video.renditions.keys.sorted() == ["ok"])
        #expect(
            issue.error
                == .wrongType(path: #"$.video.renditions.bad.codedWidth"#, expected: "integer", found: "string"))
        #expect(issue.description.contains("codedWidth"))
        // The bad rendition is not republished (Rust would reject the whole catalog).
        #expect(!catalog.jsonString().contains("\"bad\""))
    }

    @Test func pathsQuoteTrackNames() throws {
        let catalog = try HangCatalog(json: #"{"video":{"renditions":{"0.avc1":{"codec":7}}}}"#)
        #expect(
            catalog.issues.first?.error
                == .wrongType(path: #"$.video.renditions["0.avc1"].codec"#, expected: "string", found: "number"))
    }

    @Test func integersMustBeIntegers() throws {
        for bad in ["320.0", "-1", "3e2", "4294967296"] {
            let (_, issue) = try isolate(#"{"codec":"vp8","codedWidth":\#(bad)}"#)
            guard case .invalidValue(let path, _) = issue.error else {
                Issue.record("\(bad): \(issue.error)")
                continue
            }
            #expect(path.hasSuffix(".codedWidth"))
        }
    }

    @Test func missingRequiredFields() throws {
        let (_, noCodec) = try isolate(#"{"codedWidth":1}"#)
        #expect(noCodec.error == .missingField(path: "$.video.renditions.bad.codec"))
        let (_, noRate) = try isolate(#"{"codec":"opus","numberOfChannels":2}"#, section: "audio")
        #expect(noRate.error == .missingField(path: "$.audio.renditions.bad.sampleRate"))
    }

    @Test func badHexDescription() throws {
        for bad in [#""0142z0""#, #""014""#, #""AUIAKv/hABtnQgAq""#] {
            let (_, issue) = try isolate(#"{"codec":"avc1.42c00d","description":\#(bad)}"#)
            #expect(issue.error.description.contains("description"), "\(bad)")
        }
    }

    @Test func renditionThatIsNotAnObject() throws {
        let (_, issue) = try isolate("[]")
        #expect(issue.error == .wrongType(path: "$.video.renditions.bad", expected: "object", found: "array"))
    }

    @Test func duplicateKnownField() throws {
        let (_, issue) = try isolate(#"{"codec":"vp8","codec":"vp8"}"#)
        #expect(issue.error == .duplicateField(path: "$.video.renditions.bad.codec"))
        let (_, alias) = try isolate(#"{"codec":"vp8","displayAspectWidth":1,"displayRatioWidth":1}"#)
        #expect(alias.error == .duplicateField(path: "$.video.renditions.bad.displayRatioWidth"))
    }

    @Test func sectionErrorsAreFatal() {
        #expect(throws: CatalogError.wrongType(path: "$", expected: "object", found: "array")) {
            try HangCatalog(json: "[]")
        }
        #expect(throws: CatalogError.wrongType(path: "$.video", expected: "object", found: "string")) {
            try HangCatalog(json: #"{"video":"x"}"#)
        }
        #expect(throws: CatalogError.wrongType(path: "$.audio.renditions", expected: "object", found: "array")) {
            try HangCatalog(json: #"{"audio":{"renditions":[]}}"#)
        }
        #expect(throws: CatalogError.missingField(path: "$.video.display.height")) {
            try HangCatalog(json: #"{"video":{"renditions":{},"display":{"width":1}}}"#)
        }
    }

    @Test func sizeLimit() {
        let limits = CatalogLimits(maxBytes: 64, maxDepth: 32, maxRenditions: 256)
        let json = RustCatalogs.avc1Opus
        #expect(throws: CatalogError.tooLarge(size: json.utf8.count, limit: 64)) {
            try HangCatalog(json: json, limits: limits)
        }
        #expect(CatalogLimits.default.maxBytes == 1 << 20)
    }

    @Test func depthLimit() throws {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        #expect(throws: CatalogError.tooDeep(limit: 32)) { try HangCatalog(json: #"{"x":"# + deep + "}") }
        // 32 levels (the root object included) are fine.
        let ok = String(repeating: "[", count: 31) + String(repeating: "]", count: 31)
        #expect(try HangCatalog(json: #"{"x":"# + ok + "}").extra["x"] != nil)
        // Deep nesting far beyond the limit fails fast, without exhausting the stack.
        let huge = String(repeating: "[", count: 200_000)
        #expect(throws: CatalogError.tooDeep(limit: 32)) { try HangCatalog(json: #"{"x":"# + huge + "}") }
    }

    @Test func renditionCountLimit() throws {
        let limits = CatalogLimits(maxBytes: 1 << 20, maxDepth: 32, maxRenditions: 2)
        let json = #"{"video":{"renditions":{"a":{"codec":"vp8"},"b":{"codec":"vp8"},"c":{"codec":"vp8"}}}}"#
        #expect(throws: CatalogError.tooManyRenditions(path: "$.video.renditions", limit: 2)) {
            try HangCatalog(json: json, limits: limits)
        }
    }

    @Test func nonFiniteNumbersAreRejected() {
        #expect(throws: CatalogError.nonFiniteNumber(path: #"$.video.renditions.v.framerate"#)) {
            try HangCatalog(json: #"{"video":{"renditions":{"v":{"codec":"vp8","framerate":1e999}}}}"#)
        }
        for bad in ["NaN", "Infinity", "-Infinity"] {
            #expect(throws: CatalogError.self) { try HangCatalog(json: #"{"x":\#(bad)}"#) }
        }
    }

    @Test func malformedJSON() {
        for bad in [
            "", "{", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, "{} x", #"{"a":01}"#, #"{"a":1.}"#, #"{"a":-}"#,
            #"{"a":"\x"}"#, #"{"a":"\ud800"}"#, #"{"a":"\udc00x"}"#, "{\"a\":\"\u{01}\"}", #"{"a":tru}"#, "{'a':1}",
        ] {
            #expect(throws: CatalogError.self, "\(bad)") { try HangCatalog(json: bad) }
        }
        // Invalid UTF-8.
        #expect(throws: CatalogError.self) { try HangCatalog(json: [0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) }
    }

    @Test func stringsAreUnescapedAndReescaped() throws {
        let json = #"{"x":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00\u0001"}"#
        let catalog = try HangCatalog(json: json)
        #expect(catalog.extra["x"] == .string("a\"b\\c/d\n\té😀\u{01}"))
        #expect(catalog.extra["x"]?.jsonString == #""a\"b\\c/d\n\té😀\u0001""#)
    }
}

@Suite("SwiftMoQ's catalog member")
struct SwiftMoQExtensionTests {
    @Test("the item and its start round-trip beside the clock epoch; hang readers keep the rest")
    func roundTrip() throws {
        var catalog = HangCatalog()
        SwiftMoQExtension(clockEpochUs: 1_700_000_000_000_000, item: 3, itemStartUs: 42_000_000, live: false)
            .write(into: &catalog)
        let parsed = try HangCatalog(json: catalog.jsonBytes())
        let member = SwiftMoQExtension(catalog: parsed)
        #expect(member.clockEpochUs == 1_700_000_000_000_000)
        #expect(member.timelineItem?.item == 3 && member.timelineItem?.startUs == 42_000_000)
        #expect(member.isFinite)
        #expect(!SwiftMoQExtension(catalog: HangCatalog()).isFinite, "not said: not finite")
        SwiftMoQExtension().write(into: &catalog)
        #expect(catalog.extra["swiftmoq"] == nil)
    }

    @Test("a member that is not what SwiftMoQ writes gives no item, and no error")
    func hostile() throws {
        for json in [
            #"{"swiftmoq": "x"}"#, #"{"swiftmoq": {"item": -1, "itemStartUs": 5}}"#,
            #"{"swiftmoq": {"item": 1.5, "itemStartUs": 5}}"#, #"{"swiftmoq": {"item": 2}}"#,
            #"{"swiftmoq": {"item": 99999999999999999999999, "itemStartUs": 1}}"#,
        ] {
            let catalog = try HangCatalog(json: json)
            #expect(SwiftMoQExtension(catalog: catalog).timelineItem == nil, "\(json)")
        }
    }
}
