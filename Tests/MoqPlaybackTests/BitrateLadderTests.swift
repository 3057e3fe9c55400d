// SPDX-License-Identifier: MIT
import MoqCatalog
import MoqMedia
import MoqPlayback
import Testing

/// Which catalog sections are a ladder, and how it is ranked and capped.
@Suite("BitrateLadder: renditions of one picture by cost")
struct BitrateLadderTests {
    static func video(
        _ name: String, _ codec: String = "avc3.64001f", bitrate: UInt64? = nil, size: (UInt32, UInt32)? = nil
    )
        -> PlayableRendition
    {
        var v = VideoConfig(codec: codec)
        v.bitrate = bitrate
        v.codedWidth = size?.0
        v.codedHeight = size?.1
        return LadderLink.playable(name, v)
    }

    @Test("ranked by bitrate, lowest first; caps leave out what is larger or dearer, never everything")
    func rankedAndCapped() {
        let renditions = [
            Self.video("hd", bitrate: 3_500_000, size: (1280, 720)),
            Self.video("sd", bitrate: 1_200_000, size: (640, 360)),
            Self.video("ld", bitrate: 400_000, size: (320, 180)),
        ]
        #expect(BitrateLadder(renditions)?.rungs.map(\.name) == ["ld", "sd", "hd"])
        #expect(BitrateLadder(renditions, cap: RenditionCap(maxHeight: 360))?.rungs.map(\.name) == ["ld", "sd"])
        #expect(BitrateLadder(renditions, cap: RenditionCap(maxBitrate: 1_000_000))?.rungs.map(\.name) == ["ld"])
        #expect(BitrateLadder(renditions, cap: RenditionCap(maxBitrate: 1))?.rungs.map(\.name) == ["ld"])
        #expect(BitrateLadder(renditions)?.highest(within: 2_000_000) == 1)
        #expect(BitrateLadder(renditions)?.highest(within: 100) == 0, "the lowest when nothing fits")
    }

    @Test("several pictures are not a ladder: equal bitrates and sizes, mixed codecs, a single rendition")
    func notALadder() {
        #expect(BitrateLadder([Self.video("front", size: (640, 480)), Self.video("rear", size: (640, 480))]) == nil)
        #expect(
            BitrateLadder([Self.video("a", bitrate: 1_000_000), Self.video("b", bitrate: 1_000_000)]) == nil)
        #expect(BitrateLadder([Self.video("a", bitrate: 2), Self.video("b", "vp8", bitrate: 1)]) == nil)
        #expect(BitrateLadder([Self.video("a", bitrate: 2)]) == nil)
        #expect(BitrateLadder([Self.video("a", bitrate: 2), Self.video("b", "avc1.42c01e", bitrate: 1)]) != nil)
    }

    @Test("max-resolution parses WIDTHxHEIGHT")
    func resolution() {
        #expect(RenditionCap.resolution("1280x720")! == (1280, 720))
        #expect(RenditionCap.resolution("0x480")! == (0, 480))
        #expect(RenditionCap.resolution("720p") == nil)
    }

    @Test("a player starts on the top rung within its caps")
    func starting() {
        let ladder = BitrateLadder([Self.video("a", bitrate: 400_000), Self.video("b", bitrate: 3_500_000)])!
        #expect(AdaptiveBitrate.startingRung(ladder) == 1)
        let capped = BitrateLadder(
            [Self.video("a", bitrate: 400_000), Self.video("b", bitrate: 3_500_000)],
            cap: RenditionCap(maxBitrate: 1_000_000))!
        #expect(AdaptiveBitrate.startingRung(capped) == 0)
    }
}
