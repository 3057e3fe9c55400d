// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqPlayback
import Testing

@Suite("RenditionChoice: which renditions moqsrc plays")
struct RenditionChoiceTests {
    var catalog: HangCatalog {
        var c = HangCatalog()
        c.set("hd", .video(VideoConfig(codec: "avc3.64001f")))
        c.set("sd", .video(VideoConfig(codec: "avc3.42c01e")))
        c.set("weird", .video(VideoConfig(codec: "theora")))
        c.set("en", .audio(AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)))
        return c
    }

    @Test("by default, the first playable of each kind in catalog order; unsupported ones are skipped with a reason")
    func defaults() {
        let choice = RenditionChoice(catalog: catalog, video: nil, audio: nil)
        #expect(choice.video?.rendition.name == "hd")
        #expect(choice.audio?.rendition.name == "en")
        #expect(choice.playable.map(\.rendition.name) == ["hd", "sd", "en"])
        #expect(choice.skipped.map(\.name) == ["weird"])
        #expect(choice.notes.isEmpty)
    }

    @Test("by name, or none")
    func named() {
        let choice = RenditionChoice(catalog: catalog, video: "sd", audio: RenditionChoice.none)
        #expect(choice.video?.rendition.name == "sd")
        #expect(choice.audio == nil)
    }

    @Test("a name that is not playable falls back to the first, with a note that names the choices")
    func fallback() {
        let choice = RenditionChoice(catalog: catalog, video: "weird", audio: nil)
        #expect(choice.video?.rendition.name == "hd")
        #expect(choice.notes.count == 1)
        #expect(choice.notes[0].contains("\"weird\"") && choice.notes[0].contains("hd, sd"))
    }
}
