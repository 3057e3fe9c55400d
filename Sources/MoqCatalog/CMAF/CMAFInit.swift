// SPDX-License-Identifier: MIT
public import MoqWire

/// One track of a CMAF init segment (`ftyp` + `moov`): what a player needs to read its
/// fragments and a publisher needs to describe it in the catalog.
public struct CMAFTrack: Sendable, Equatable {
    /// `tkhd`'s track_ID: fragments name their track by it.
    public var trackID: UInt32
    /// `mdhd`'s timescale: sample times count in 1/timescale s.
    public var timescale: UInt32
    /// `hdlr`'s handler type: `vide`, `soun`…
    public var handler: String
    /// The sample entry's four-character code: `avc1`, `hvc1`, `Opus`, `mp4a`…
    public var sampleEntry: String
    /// The payload of the sample entry's decoder configuration box (`avcC`, `hvcC`, `dOps`,
    /// `esds`, `av1C`, `dfLa`), if it has one.
    public var configuration: Bytes?
    /// Video: the sample entry's width and height.
    public var width: UInt16 = 0
    public var height: UInt16 = 0
    /// Audio: the sample entry's channel count and sample rate (Hz).
    public var channels: UInt16 = 0
    public var sampleRate: UInt32 = 0
    /// `trex` defaults, used when a fragment does not say.
    public var defaultSampleDuration: UInt32 = 0
    public var defaultSampleSize: UInt32 = 0
    public var defaultSampleFlags: UInt32 = 0

    public var isVideo: Bool { handler == "vide" }
    public var isAudio: Bool { handler == "soun" }
}

/// A CMAF init segment: its tracks, and a per-track init segment for each (the catalog's
/// `container.init` describes one track).
public struct CMAFInit: Sendable, Equatable {
    /// The segment as received.
    public let bytes: Bytes
    /// Its tracks, in `moov` order.
    public let tracks: [CMAFTrack]
    private let ftyp: Range<Int>?
    private let mvhd: Range<Int>
    private let traks: [UInt32: Range<Int>]
    private let trexes: [UInt32: Range<Int>]

    /// Reads `bytes` (`ftyp`, optional, then `moov`; other top-level boxes are ignored).
    /// - Throws: ``CMAFError`` when there is no `moov` or a track lacks what a player needs.
    public init(_ bytes: Bytes) throws(CMAFError) {
        self.bytes = bytes
        let r = ISOReader(data: bytes)
        let top = try r.boxes(in: 0..<bytes.count)
        ftyp = top.first { $0.type == Code.ftyp }?.range
        guard let moov = top.first(where: { $0.type == Code.moov }) else { throw .malformed("no moov") }
        let children = try r.boxes(in: moov.payload)
        guard let mvhd = children.first(where: { $0.type == Code.mvhd }) else { throw .malformed("no mvhd") }
        self.mvhd = mvhd.range
        var trexes: [UInt32: Range<Int>] = [:]
        var defaults: [UInt32: (UInt32, UInt32, UInt32)] = [:]
        if let mvex = children.first(where: { $0.type == Code.mvex }) {
            for trex in try r.boxes(in: mvex.payload) where trex.type == Code.trex {
                let (f, p) = (r.fields(of: trex), trex.payloadStart)
                let id = try f.u32(p + 4)
                trexes[id] = trex.range
                defaults[id] = (try f.u32(p + 12), try f.u32(p + 16), try f.u32(p + 20))
            }
        }
        var tracks: [CMAFTrack] = []
        var traks: [UInt32: Range<Int>] = [:]
        for trak in children where trak.type == Code.trak {
            var track = try Self.track(trak, reader: r)
            if let (duration, size, flags) = defaults[track.trackID] {
                track.defaultSampleDuration = duration
                track.defaultSampleSize = size
                track.defaultSampleFlags = flags
            }
            guard traks[track.trackID] == nil else { throw .malformed("two tracks with ID \(track.trackID)") }
            traks[track.trackID] = trak.range
            tracks.append(track)
        }
        guard !tracks.isEmpty else { throw .malformed("moov has no trak") }
        self.tracks = tracks
        self.traks = traks
        self.trexes = trexes
    }

    /// The track with `trackID`.
    public func track(_ trackID: UInt32) -> CMAFTrack? { tracks.first { $0.trackID == trackID } }

    /// An init segment holding only `trackID` (`ftyp`, `moov` with `mvhd`, its `trak` and `mvex`
    /// with its `trex`), as a catalog rendition's `container.init`. Nil for an unknown track.
    public func segment(forTrack trackID: UInt32) -> Bytes? {
        guard let trak = traks[trackID], let track = track(trackID) else { return nil }
        var w = ISOWriter()
        if let ftyp { w.raw(bytes[ftyp]) }
        w.box(Code.moov) { moov in
            moov.raw(bytes[mvhd])
            moov.raw(bytes[trak])
            moov.box(Code.mvex) { mvex in
                if let trex = trexes[trackID] {
                    mvex.raw(bytes[trex])
                } else {
                    mvex.box(Code.trex) { t in
                        t.u32(0)
                        t.u32(trackID)
                        t.u32(1)
                        t.u32(track.defaultSampleDuration)
                        t.u32(track.defaultSampleSize)
                        t.u32(track.defaultSampleFlags)
                    }
                }
            }
        }
        return Bytes(w.bytes)
    }

    private static func track(_ trak: ISOBox, reader r: ISOReader) throws(CMAFError) -> CMAFTrack {
        let tkhd = try r.require(Code.tkhd, in: trak.payload, of: "trak")
        let tkhdFields = r.fields(of: tkhd)
        let trackID = try tkhdFields.u32(tkhd.payloadStart + (try tkhdFields.u8(tkhd.payloadStart) == 1 ? 20 : 12))
        let mdia = try r.require(Code.mdia, in: trak.payload, of: "trak")
        let mdhd = try r.require(Code.mdhd, in: mdia.payload, of: "mdia")
        let mdhdFields = r.fields(of: mdhd)
        let timescale = try mdhdFields.u32(mdhd.payloadStart + (try mdhdFields.u8(mdhd.payloadStart) == 1 ? 20 : 12))
        guard timescale > 0 else { throw .malformed("track \(trackID) has timescale 0") }
        let hdlr = try r.require(Code.hdlr, in: mdia.payload, of: "mdia")
        let handler = ISOReader.name(try r.fields(of: hdlr).u32(hdlr.payloadStart + 8))
        let minf = try r.require(Code.minf, in: mdia.payload, of: "mdia")
        let stbl = try r.require(Code.stbl, in: minf.payload, of: "minf")
        let stsd = try r.require(Code.stsd, in: stbl.payload, of: "stbl")
        guard stsd.payloadStart + 8 <= stsd.end else { throw .malformed("stsd is too short") }
        guard let entry = try r.boxes(in: (stsd.payloadStart + 8)..<stsd.end).first else {
            throw .malformed("track \(trackID) has no sample entry")
        }
        var track = CMAFTrack(
            trackID: trackID, timescale: timescale, handler: handler, sampleEntry: ISOReader.name(entry.type),
            configuration: nil)
        let (f, p) = (r.fields(of: entry), entry.payloadStart)
        let childrenStart: Int
        switch handler {
        case "vide":
            track.width = try f.u16(p + 24)
            track.height = try f.u16(p + 26)
            childrenStart = p + 78
        case "soun":
            track.channels = try f.u16(p + 16)
            track.sampleRate = try f.u32(p + 24) >> 16
            childrenStart = p + 28
        default:
            return track
        }
        guard childrenStart <= entry.end else { throw .malformed("sample entry \(track.sampleEntry) is too short") }
        for child in try r.boxes(in: childrenStart..<entry.end) where Code.configurations.contains(child.type) {
            track.configuration = r.data[child.payload]
            break
        }
        return track
    }
}

/// Four-character codes this reader uses.
enum Code {
    static let ftyp = ISOReader.code("ftyp")
    static let moov = ISOReader.code("moov")
    static let mvhd = ISOReader.code("mvhd")
    static let mvex = ISOReader.code("mvex")
    static let trex = ISOReader.code("trex")
    static let trak = ISOReader.code("trak")
    static let tkhd = ISOReader.code("tkhd")
    static let mdia = ISOReader.code("mdia")
    static let mdhd = ISOReader.code("mdhd")
    static let hdlr = ISOReader.code("hdlr")
    static let minf = ISOReader.code("minf")
    static let stbl = ISOReader.code("stbl")
    static let stsd = ISOReader.code("stsd")
    static let moof = ISOReader.code("moof")
    static let mfhd = ISOReader.code("mfhd")
    static let traf = ISOReader.code("traf")
    static let tfhd = ISOReader.code("tfhd")
    static let tfdt = ISOReader.code("tfdt")
    static let trun = ISOReader.code("trun")
    static let mdat = ISOReader.code("mdat")
    /// Decoder configuration boxes inside a sample entry.
    static let configurations: Set<UInt32> = [
        ISOReader.code("avcC"), ISOReader.code("hvcC"), ISOReader.code("av1C"), ISOReader.code("vpcC"),
        ISOReader.code("dOps"), ISOReader.code("esds"), ISOReader.code("dfLa"),
    ]
}
