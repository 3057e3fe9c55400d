// SPDX-License-Identifier: MIT
import MoqWire
import Testing

@testable import MoqCatalog

/// Builds small CMAF segments the way muxers lay them out.
private enum Build {
    static func fullBox(
        _ w: inout ISOWriter, _ type: StaticString, version: UInt8 = 0, flags: UInt32 = 0,
        _ body: (inout ISOWriter) -> Void
    ) {
        w.box(ISOReader.code(type)) { b in
            b.u32(UInt32(version) << 24 | flags)
            body(&b)
        }
    }

    /// ftyp + moov with one H.264 track (ID 1, timescale 90 kHz, 320×240) and one Opus track
    /// (ID 2, 48 kHz stereo), and trex defaults for both.
    static func initSegment() -> Bytes {
        var w = ISOWriter()
        w.box(ISOReader.code("ftyp")) { f in f.raw(Bytes(Array("iso6".utf8) + [0, 0, 0, 0] + Array("iso6".utf8))) }
        w.box(Code.moov) { moov in
            fullBox(&moov, "mvhd") { m in m.raw(Bytes([UInt8](repeating: 0, count: 96))) }
            trak(&moov, id: 1, timescale: 90_000, handler: "vide") { stsd in
                stsd.box(ISOReader.code("avc1")) { e in
                    e.raw(Bytes([UInt8](repeating: 0, count: 24)))
                    e.u16(320)
                    e.u16(240)
                    e.raw(Bytes([UInt8](repeating: 0, count: 50)))
                    e.box(ISOReader.code("avcC")) { c in c.raw(Bytes([1, 0x42, 0xc0, 0x1e, 0xff, 0xe0, 0x00])) }
                }
            }
            trak(&moov, id: 2, timescale: 48_000, handler: "soun") { stsd in
                stsd.box(ISOReader.code("Opus")) { e in
                    e.raw(Bytes([UInt8](repeating: 0, count: 16)))
                    e.u16(2)
                    e.raw(Bytes([0, 16, 0, 0, 0, 0]))
                    e.u32(48_000 << 16)
                    e.box(ISOReader.code("dOps")) { c in
                        c.u8(0)
                        c.u8(2)
                        c.u16(312)
                        c.u32(48_000)
                        c.u16(0)
                        c.u8(0)
                    }
                }
            }
            moov.box(Code.mvex) { mvex in
                for (id, duration) in [(UInt32(1), UInt32(3000)), (2, 960)] {
                    fullBox(&mvex, "trex") { t in
                        t.u32(id)
                        t.u32(1)
                        t.u32(duration)
                        t.u32(0)
                        t.u32(0x0101_0000)
                    }
                }
            }
        }
        return Bytes(w.bytes)
    }

    /// tkhd's and mdhd's layout (version 0): creation and modification times (zero), one field
    /// (track id, timescale), then `padding` zero bytes of what the tests do not read.
    static func timesThen(_ w: inout ISOWriter, _ value: UInt32, padding: Int) {
        w.u32(0)
        w.u32(0)
        w.u32(value)
        w.raw(Bytes([UInt8](repeating: 0, count: padding)))
    }

    static func trak(
        _ moov: inout ISOWriter, id: UInt32, timescale: UInt32, handler: StaticString, entry: (inout ISOWriter) -> Void
    ) {
        moov.box(Code.trak) { trak in
            fullBox(&trak, "tkhd") { timesThen(&$0, id, padding: 68) }
            trak.box(Code.mdia) { mdia in
                fullBox(&mdia, "mdhd") { timesThen(&$0, timescale, padding: 8) }
                fullBox(&mdia, "hdlr") { h in
                    h.u32(0)
                    h.u32(ISOReader.code(handler))
                    h.raw(Bytes([UInt8](repeating: 0, count: 13)))
                }
                mdia.box(Code.minf) { minf in
                    minf.box(Code.stbl) { stbl in
                        fullBox(&stbl, "stsd") { s in
                            s.u32(1)
                            entry(&s)
                        }
                    }
                }
            }
        }
    }

    /// A fragment as GStreamer's mp4mux writes it: tfhd with default duration/size/flags and
    /// no base offset, tfdt, a trun with only a data offset; `sizes.count` samples of `size`.
    static func muxerFragment(track: UInt32, decodeTime: UInt32, count: Int, size: Int) -> Bytes {
        var w = ISOWriter()
        let payload = (0..<(count * size)).map { UInt8(truncatingIfNeeded: $0) }
        var moofSize = 0
        for pass in 0..<2 {
            w = ISOWriter()
            w.box(Code.moof) { moof in
                fullBox(&moof, "mfhd") { m in m.u32(7) }
                moof.box(Code.traf) { traf in
                    fullBox(&traf, "tfhd", flags: 0x38) { t in
                        t.u32(track)
                        t.u32(3000)
                        t.u32(UInt32(size))
                        t.u32(0x0101_0000)
                    }
                    fullBox(&traf, "tfdt") { t in t.u32(decodeTime) }
                    fullBox(&traf, "trun", flags: 0x05) { t in
                        t.u32(UInt32(count))
                        t.u32(UInt32(moofSize + 8))
                        t.u32(0x0200_0000)  // the first sample is a sync sample
                    }
                }
            }
            if pass == 0 { moofSize = w.bytes.count }
        }
        w.box(Code.mdat) { m in m.raw(Bytes(payload)) }
        return Bytes(w.bytes)
    }
}

@Suite("CMAF: init segments and fragments from untrusted bytes")
struct CMAFTests {
    @Test("an init segment's tracks: IDs, timescales, sample entries, configurations, trex defaults")
    func initSegment() throws {
        let parsed = try CMAFInit(Build.initSegment())
        #expect(parsed.tracks.map(\.trackID) == [1, 2])
        let video = try #require(parsed.track(1))
        #expect(video.isVideo && video.timescale == 90_000 && video.sampleEntry == "avc1")
        #expect(video.width == 320 && video.height == 240 && video.configuration?.count == 7)
        #expect(video.defaultSampleDuration == 3000 && video.defaultSampleFlags == 0x0101_0000)
        let audio = try #require(parsed.track(2))
        #expect(audio.isAudio && audio.channels == 2 && audio.sampleRate == 48_000 && audio.sampleEntry == "Opus")
        // dOps (big-endian) becomes OpusHead (little-endian): 2 channels, pre-skip 312, 48 kHz.
        #expect(audio.opusHead?.array == Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xbb, 0, 0, 0, 0, 0])
        // Each track's own init segment holds that track alone and reads back the same.
        let own = try #require(parsed.segment(forTrack: 2))
        #expect(try CMAFInit(own).tracks == [audio])
        #expect(parsed.segment(forTrack: 9) == nil)
    }

    @Test("a muxer's multi-sample fragment: sizes, durations and sync flags from the defaults")
    func muxerFragment() throws {
        let tracks = try CMAFInit(Build.initSegment()).tracks
        var times: [UInt32: UInt64] = [:]
        let fragment = Build.muxerFragment(track: 1, decodeTime: 9000, count: 3, size: 5)
        let samples = try CMAFFragment.samples(in: fragment, tracks: tracks, nextDecodeTime: &times)
        #expect(samples.map(\.decodeTime) == [9000, 12_000, 15_000])
        #expect(samples.map(\.isSync) == [true, false, false])
        #expect(samples.map { $0.data.array } == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14]])
        #expect(times[1] == 18_000)
        #expect(samples[1].presentationMicros(timescale: 90_000) == 133_333)
        // A fragment of a track the reader was not given yields nothing.
        #expect(try CMAFFragment.samples(in: fragment, tracks: [], nextDecodeTime: &times).isEmpty)
    }

    @Test("one sample as its own fragment reads back the same (B-frame offsets, 64-bit times)")
    func oneSampleRoundTrip() throws {
        let track = try #require(try CMAFInit(Build.initSegment()).track(1))
        let sample = CMAFSample(
            trackID: 1, decodeTime: 1 << 40, compositionOffset: -3000, duration: 3000, isSync: false,
            data: Bytes([9, 8, 7]))
        var times: [UInt32: UInt64] = [:]
        let again = try CMAFFragment.samples(
            in: CMAFFragment.fragment(sample, sequence: 3), tracks: [track], nextDecodeTime: &times)
        #expect(again == [sample])
    }

    @Test(
        "hostile bytes throw instead of trapping: truncation, boxes past their parent, huge sizes and counts, samples outside the data"
    )
    func hostile() throws {
        let good = Build.initSegment()
        let tracks = try CMAFInit(good).tracks
        var times: [UInt32: UInt64] = [:]
        // Every truncation of the init segment.
        for cut in stride(from: 0, to: good.count, by: 7) {
            _ = try? CMAFInit(good[0..<cut])
        }
        // A box claiming 2^64 − 1 bytes (64-bit size), and one claiming 4 bytes.
        let huge = Bytes([0, 0, 0, 1] + Array("moov".utf8) + [UInt8](repeating: 0xff, count: 8))
        #expect(throws: CMAFError.self) { try CMAFInit(huge) }
        let tiny = Bytes([0, 0, 0, 4] + Array("moov".utf8))
        #expect(throws: CMAFError.self) { try CMAFInit(tiny) }
        #expect(throws: CMAFError.self) { try CMAFInit(Bytes([])) }
        // A trun claiming 2^32 − 1 samples, and samples larger than the mdat.
        var fragment = Build.muxerFragment(track: 1, decodeTime: 0, count: 2, size: 4).array
        let trun = try #require(indexOf(Array("trun".utf8), in: fragment))
        let countAt = trun + 12  // size, type, version and flags, then sample_count
        fragment.replaceSubrange(countAt..<(countAt + 4), with: [0xff, 0xff, 0xff, 0xff])
        #expect(throws: CMAFError.self) {
            try CMAFFragment.samples(in: Bytes(fragment), tracks: tracks, nextDecodeTime: &times)
        }
        let oversized = Build.muxerFragment(track: 1, decodeTime: 0, count: 2, size: 4).array
        var bigger = oversized
        let tfhd = try #require(indexOf(Array("tfhd".utf8), in: bigger))
        bigger.replaceSubrange((tfhd + 20)..<(tfhd + 24), with: [0x7f, 0xff, 0xff, 0xff])  // default sample size
        #expect(throws: CMAFError.self) {
            try CMAFFragment.samples(in: Bytes(bigger), tracks: tracks, nextDecodeTime: &times)
        }
        // Every truncation of a fragment throws or yields samples within the bytes.
        for cut in 0..<oversized.count {
            let part = Bytes(Array(oversized[0..<cut]))
            if let samples = try? CMAFFragment.samples(in: part, tracks: tracks, nextDecodeTime: &times) {
                #expect(samples.allSatisfy { $0.data.count <= part.count })
            }
        }
    }

    @Test("samples are bounded per call, not per trun: many truns of empty samples are refused")
    func manyEmptyTruns() throws {
        let tracks = try CMAFInit(Build.initSegment()).tracks
        var w = ISOWriter()
        w.box(Code.moof) { moof in
            moof.box(Code.traf) { traf in
                Build.fullBox(&traf, "tfhd", flags: 0x10) { t in
                    t.u32(1)
                    t.u32(0)  // default sample size 0: samples cost no data
                }
                for _ in 0..<3 {
                    Build.fullBox(&traf, "trun") { t in t.u32(30_000) }
                }
            }
        }
        var times: [UInt32: UInt64] = [:]
        #expect(throws: CMAFError.self) {
            try CMAFFragment.samples(in: Bytes(w.bytes), tracks: tracks, nextDecodeTime: &times)
        }
    }

    private func indexOf(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
            .map { $0 - 4 }
    }
}
