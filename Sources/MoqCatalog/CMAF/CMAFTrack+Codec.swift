// SPDX-License-Identifier: MIT
public import MoqWire

extension CMAFTrack {
    /// AAC's AudioSpecificConfig, from the `esds` box of an `mp4a` sample entry (the
    /// DecoderSpecificInfo descriptor). Nil when absent or malformed.
    public var audioSpecificConfig: Bytes? {
        guard sampleEntry == "mp4a", let esds = configuration, esds.count > 4 else { return nil }
        let r = ISOReader(data: esds)
        var at = 4  // version and flags
        /// A descriptor's tag and payload range (sizes are 1–4 bytes of 7 bits each).
        func descriptor(at start: Int) throws(CMAFError) -> (tag: UInt8, payload: Range<Int>) {
            let tag = try r.u8(start)
            var size = 0
            var p = start + 1
            for _ in 0..<4 {
                let b = try r.u8(p)
                p += 1
                size = size << 7 | Int(b & 0x7f)
                if b & 0x80 == 0 { break }
            }
            guard size <= esds.count - p else { throw .malformed("esds descriptor past the box") }
            return (tag, p..<(p + size))
        }
        do {
            let es = try descriptor(at: at)
            guard es.tag == 0x03 else { return nil }
            at = es.payload.lowerBound + 2
            let flags = try r.u8(at)
            at += 1
            if flags & 0x80 != 0 { at += 2 }
            if flags & 0x40 != 0 { at += 1 + Int(try r.u8(at)) }
            if flags & 0x20 != 0 { at += 2 }
            let config = try descriptor(at: at)
            guard config.tag == 0x04 else { return nil }
            var p = config.payload.lowerBound + 13
            while p < config.payload.upperBound {
                let d = try descriptor(at: p)
                if d.tag == 0x05 { return esds[d.payload] }
                p = d.payload.upperBound
            }
            return nil
        } catch {
            return nil
        }
    }

    /// The Opus identification header (`OpusHead`, RFC 7845) equivalent to an `Opus` sample
    /// entry's `dOps` box (big-endian there, little-endian in OpusHead). Nil when absent or malformed.
    public var opusHead: Bytes? {
        guard sampleEntry == "Opus", let dOps = configuration, dOps.count >= 11 else { return nil }
        let r = ISOReader(data: dOps)
        guard let channels = try? r.u8(1), var preSkip = try? r.u16(2), var rate = try? r.u32(4),
            var gain = try? r.u16(8), let family = try? r.u8(10)
        else { return nil }
        // GStreamer 1.22's mp4mux writes these fields little-endian (as in OpusHead): a rate
        // that only makes sense byte-swapped is read that way.
        if !(8000...384_000).contains(rate), (8000...384_000).contains(rate.byteSwapped) {
            (preSkip, rate, gain) = (preSkip.byteSwapped, rate.byteSwapped, gain.byteSwapped)
        }
        var head: [UInt8] = Array("OpusHead".utf8) + [1, channels]
        head += [UInt8(truncatingIfNeeded: preSkip), UInt8(preSkip >> 8)]
        head += (0..<4).map { UInt8(truncatingIfNeeded: rate >> (8 * $0)) }
        head += [UInt8(truncatingIfNeeded: gain), UInt8(gain >> 8), family]
        if family != 0 {
            // Stream count, coupled count and one mapping byte per channel follow as they are.
            let mapping = 2 + Int(channels)
            guard dOps.count >= 11 + mapping else { return nil }
            head += dOps[11..<(11 + mapping)].array
        }
        return Bytes(head)
    }
}
