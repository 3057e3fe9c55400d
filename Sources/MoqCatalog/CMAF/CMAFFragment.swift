// SPDX-License-Identifier: MIT
public import MoqWire

/// One media sample of a CMAF fragment.
public struct CMAFSample: Sendable, Equatable {
    /// The track it belongs to.
    public var trackID: UInt32
    /// Its decode time, in the track's timescale.
    public var decodeTime: UInt64
    /// Presentation time minus decode time (B-frames), in the track's timescale.
    public var compositionOffset: Int64
    /// Its duration, in the track's timescale.
    public var duration: UInt32
    /// A sync sample (a keyframe; every audio sample).
    public var isSync: Bool
    /// The coded bytes (a view into the fragment: no copy).
    public var data: Bytes

    public init(
        trackID: UInt32, decodeTime: UInt64, compositionOffset: Int64 = 0, duration: UInt32, isSync: Bool, data: Bytes
    ) {
        self.trackID = trackID
        self.decodeTime = decodeTime
        self.compositionOffset = compositionOffset
        self.duration = duration
        self.isSync = isSync
        self.data = data
    }

    /// The presentation time in µs, given the track's timescale (saturating; 0 before zero).
    public func presentationMicros(timescale: UInt32) -> UInt64 {
        let pts =
            compositionOffset >= 0
            ? decodeTime.addingReportingOverflow(UInt64(compositionOffset)).partialValue
            : decodeTime > compositionOffset.magnitude ? decodeTime - compositionOffset.magnitude : 0
        guard timescale > 0 else { return 0 }
        let (whole, rest) = pts.quotientAndRemainder(dividingBy: UInt64(timescale))
        let (micros, overflow) = whole.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return UInt64.max }
        return micros.addingReportingOverflow(rest * 1_000_000 / UInt64(timescale)).partialValue
    }
}

/// Reads and writes CMAF fragments (`moof` + `mdat`).
public enum CMAFFragment {
    /// Samples one call of ``samples(in:tracks:nextDecodeTime:)`` yields at most, over every `trun`
    /// of every fragment in the bytes (a hostile `trun` claims billions, or thousands of `trun`s
    /// repeat one with no sample data).
    public static let maxSamples = 65_536

    /// The samples of every `moof` + `mdat` in `data`, in order, for the tracks `tracks` knows
    /// (others are skipped).
    ///
    /// - Parameter nextDecodeTime: per track, where the previous fragment ended: used when a
    ///   fragment has no `tfdt`, and updated.
    /// - Throws: ``CMAFError`` when a box or a sample lies outside the bytes, or counts are absurd.
    public static func samples(
        in data: Bytes, tracks: [CMAFTrack], nextDecodeTime: inout [UInt32: UInt64]
    ) throws(CMAFError) -> [CMAFSample] {
        let r = ISOReader(data: data)
        var out: [CMAFSample] = []
        var listed = 0  // samples listed so far, of every track
        for moof in try r.boxes(in: 0..<data.count) where moof.type == Code.moof {
            var dataEnd = moof.start  // where the previous track fragment's data ended
            for traf in try r.boxes(in: moof.payload) where traf.type == Code.traf {
                let tfhd = try r.require(Code.tfhd, in: traf.payload, of: "traf")
                let tf = r.fields(of: tfhd)
                let flags = try tf.u32(tfhd.payloadStart) & 0x00ff_ffff
                let trackID = try tf.u32(tfhd.payloadStart + 4)
                var at = tfhd.payloadStart + 8
                var base = moof.start
                if flags & 0x01 != 0 {
                    let offset = try tf.u64(at)
                    guard offset <= UInt64(data.count) else { throw .malformed("base data offset past the data") }
                    base = Int(offset)
                    at += 8
                } else if flags & 0x02_0000 == 0 {
                    base = dataEnd
                }
                let track = tracks.first { $0.trackID == trackID }
                if flags & 0x02 != 0 { at += 4 }
                var defaultDuration = track?.defaultSampleDuration ?? 0
                var defaultSize = track?.defaultSampleSize ?? 0
                var defaultFlags = track?.defaultSampleFlags ?? 0
                if flags & 0x08 != 0 {
                    defaultDuration = try tf.u32(at)
                    at += 4
                }
                if flags & 0x10 != 0 {
                    defaultSize = try tf.u32(at)
                    at += 4
                }
                if flags & 0x20 != 0 { defaultFlags = try tf.u32(at) }
                let children = try r.boxes(in: traf.payload)
                var decodeTime = nextDecodeTime[trackID] ?? 0
                if let tfdt = children.first(where: { $0.type == Code.tfdt }) {
                    let f = r.fields(of: tfdt)
                    decodeTime =
                        try f.u8(tfdt.payloadStart) == 1
                        ? try f.u64(tfdt.payloadStart + 4) : UInt64(try f.u32(tfdt.payloadStart + 4))
                }
                var cursor = base
                for trun in children where trun.type == Code.trun {
                    let f = r.fields(of: trun)
                    let version = try f.u8(trun.payloadStart)
                    let trunFlags = try f.u32(trun.payloadStart) & 0x00ff_ffff
                    let count = Int(try f.u32(trun.payloadStart + 4))
                    var p = trun.payloadStart + 8
                    if trunFlags & 0x01 != 0 {
                        let offset = Int(Int32(bitPattern: try f.u32(p)))
                        cursor = base + offset
                        p += 4
                    }
                    var firstFlags: UInt32?
                    if trunFlags & 0x04 != 0 {
                        firstFlags = try f.u32(p)
                        p += 4
                    }
                    let fields = [0x100, 0x200, 0x400, 0x800].filter { trunFlags & UInt32($0) != 0 }.count
                    guard count <= maxSamples - listed, count * fields * 4 <= trun.end - p else {
                        throw .malformed("more than \(maxSamples) samples (a trun lists \(count))")
                    }
                    listed += count
                    for i in 0..<count {
                        var duration = defaultDuration
                        var size = defaultSize
                        var sampleFlags = i == 0 ? firstFlags ?? defaultFlags : defaultFlags
                        var cto: Int64 = 0
                        if trunFlags & 0x100 != 0 {
                            duration = try f.u32(p)
                            p += 4
                        }
                        if trunFlags & 0x200 != 0 {
                            size = try f.u32(p)
                            p += 4
                        }
                        if trunFlags & 0x400 != 0 {
                            sampleFlags = try f.u32(p)
                            p += 4
                        }
                        if trunFlags & 0x800 != 0 {
                            let raw = try f.u32(p)
                            cto = version == 0 ? Int64(raw) : Int64(Int32(bitPattern: raw))
                            p += 4
                        }
                        guard cursor >= 0, Int(size) <= data.count - cursor else {
                            throw .malformed("sample \(i) of track \(trackID) lies outside the fragment")
                        }
                        if track != nil {
                            out.append(
                                CMAFSample(
                                    trackID: trackID, decodeTime: decodeTime, compositionOffset: cto,
                                    duration: duration,
                                    isSync: sampleFlags & 0x0001_0000 == 0, data: data[cursor..<(cursor + Int(size))]))
                        }
                        cursor += Int(size)
                        decodeTime = decodeTime.addingReportingOverflow(UInt64(duration)).partialValue
                    }
                }
                dataEnd = cursor
                nextDecodeTime[trackID] = decodeTime
            }
        }
        return out
    }

    /// `sample` alone as a fragment (`moof` with one `traf` and a one-sample `trun`, then `mdat`):
    /// how a track of the `cmaf` container carries each frame.
    public static func fragment(_ sample: CMAFSample, sequence: UInt32) -> Bytes {
        var w = ISOWriter()
        // moof 104 bytes: mfhd 16, traf 80 (tfhd 16, tfdt 20, trun 36); the sample follows mdat's header.
        w.box(Code.moof) { moof in
            moof.box(Code.mfhd) { m in
                m.u32(0)
                m.u32(sequence)
            }
            moof.box(Code.traf) { traf in
                traf.box(Code.tfhd) { t in
                    t.u32(0x02_0000)  // default-base-is-moof
                    t.u32(sample.trackID)
                }
                traf.box(Code.tfdt) { t in
                    t.u32(0x0100_0000)  // version 1: 64-bit
                    t.u64(sample.decodeTime)
                }
                traf.box(Code.trun) { t in
                    t.u32(0x0100_0F01)  // version 1; data offset, duration, size, flags, composition offset
                    t.u32(1)
                    t.u32(104 + 8)
                    t.u32(sample.duration)
                    t.u32(UInt32(clamping: sample.data.count))
                    t.u32(sample.isSync ? 0x0200_0000 : 0x0101_0000)
                    t.u32(UInt32(bitPattern: Int32(clamping: sample.compositionOffset)))
                }
            }
        }
        w.box(Code.mdat) { m in m.raw(sample.data) }
        return Bytes(w.bytes)
    }
}
