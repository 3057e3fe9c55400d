// SPDX-License-Identifier: MIT
import MoqCatalog
import Testing

@Suite("The captions section")
struct CaptionSectionTests {
    @Test("written only when there is a caption rendition, read back with its fields and unknown members")
    func roundTrip() throws {
        var catalog = HangCatalog()
        catalog.set("0.opus", .audio(AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)))
        #expect(!catalog.jsonString().contains("captions"))
        catalog.captions.renditions["1.wvtt"] = CaptionConfig(language: "en", label: "English")
        let json = catalog.jsonString()
        #expect(
            json.hasSuffix(
                #""captions":{"renditions":{"1.wvtt":{"codec":"wvtt","language":"en","label":"English","container":{"kind":"legacy"}}}}}"#
            ), "\(json)")
        let back = try HangCatalog(json: json)
        #expect(back.captions == catalog.captions)
        #expect(back.captions.first?.name == "1.wvtt")
        let extended = try HangCatalog(
            json:
                #"{"video":{"renditions":{}},"audio":{"renditions":{}},"captions":{"renditions":{"c":{"codec":"wvtt","x":1}},"y":2}}"#
        )
        #expect(extended.captions.renditions["c"]?.extra["x"] != nil)
        #expect(extended.jsonString().contains(#""y":2"#))
        catalog.remove("1.wvtt")
        #expect(catalog.captions.renditions.isEmpty)
    }

    @Test("a malformed caption rendition is left out; the rest of the catalog stands")
    func malformedRendition() throws {
        let catalog = try HangCatalog(
            json:
                #"{"video":{"renditions":{}},"audio":{"renditions":{}},"captions":{"renditions":{"a":{"codec":7},"b":{"codec":"wvtt"}}}}"#
        )
        #expect(catalog.captions.renditions.keys.sorted() == ["b"])
        #expect(throws: CatalogError.self) {
            _ = try HangCatalog(json: #"{"video":{"renditions":{}},"audio":{"renditions":{}},"captions":3}"#)
        }
    }
}
