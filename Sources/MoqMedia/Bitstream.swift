// SPDX-License-Identifier: MIT

// The few header fields a codec string needs when the parameter sets travel in
// band (avc3/hev1 Annex-B, AV1 OBUs without av1C): pbutils 1.22 has no helper
// that reads them from a bitstream, so they are read here, bounded and defensive.

enum Bitstream {
    /// NAL units of an Annex-B access unit (start codes `00 00 01` / `00 00 00 01`), without start codes.
    static func annexBUnits(_ data: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
        var starts: [(payload: Int, code: Int)] = []
        var i = 0
        let n = data.count
        while i + 3 <= n {
            if data[i] == 0, data[i + 1] == 0, data[i + 2] == 1 {
                let code = i > 0 && data[i - 1] == 0 ? i - 1 : i
                starts.append((i + 3, code))
                i += 3
            } else {
                i += 1
            }
        }
        var units: [UnsafeRawBufferPointer] = []
        for (k, start) in starts.enumerated() {
            let end = k + 1 < starts.count ? starts[k + 1].code : n
            if end > start.payload { units.append(UnsafeRawBufferPointer(rebasing: data[start.payload..<end])) }
        }
        return units
    }

    /// The RBSP of a NAL unit prefix: emulation-prevention bytes (`00 00 03`) removed, at most `limit` bytes.
    static func rbsp(_ nal: UnsafeRawBufferPointer, from offset: Int, limit: Int) -> [UInt8] {
        var out: [UInt8] = []
        var zeros = 0
        var i = offset
        while i < nal.count && out.count < limit {
            let b = nal[i]
            if zeros >= 2 && b == 3 {
                zeros = 0
                i += 1
                continue
            }
            zeros = b == 0 ? zeros + 1 : 0
            out.append(b)
            i += 1
        }
        return out
    }

    /// profile_idc, constraint flags and level_idc of the first H.264 SPS (NAL type 7) in an Annex-B access unit.
    static func h264Codec(annexB data: UnsafeRawBufferPointer) -> H264Codec? {
        for nal in annexBUnits(data) where nal.count >= 4 && nal[0] & 0x1f == 7 {
            let sps = rbsp(nal, from: 1, limit: 3)
            guard sps.count == 3 else { continue }
            return H264Codec(inBand: true, profile: sps[0], constraints: sps[1], level: sps[2])
        }
        return nil
    }

    /// The general profile_tier_level of the first H.265 SPS (NAL type 33) in an Annex-B access unit.
    static func h265Codec(annexB data: UnsafeRawBufferPointer) -> H265Codec? {
        for nal in annexBUnits(data) where nal.count >= 3 && (nal[0] >> 1) & 0x3f == 33 {
            // 2-byte NAL header, then vps_id(4) max_sub_layers_minus1(3) temporal_id_nesting(1), then the PTL.
            let rbsp = rbsp(nal, from: 2, limit: 13)
            guard rbsp.count == 13 else { continue }
            return H265Codec(inBand: true, profileTierLevel: Array(rbsp[1...]))
        }
        return nil
    }

    /// The codec parameters in the first AV1 sequence header OBU of a temporal unit
    /// (low-overhead format, `obu_has_size_field` set, as av1parse's `obu-stream` carries).
    static func av1Codec(obus data: UnsafeRawBufferPointer) -> AV1Codec? {
        var i = 0
        while i < data.count {
            let header = data[i]
            let type = header >> 3 & 0x0f
            let hasExtension = header & 0x04 != 0
            let hasSize = header & 0x02 != 0
            var p = i + 1 + (hasExtension ? 1 : 0)
            guard hasSize, p <= data.count else { return nil }
            var size = 0
            var shift = 0
            while true {
                guard p < data.count, shift < 56 else { return nil }
                let b = data[p]
                size |= Int(b & 0x7f) << shift
                p += 1
                shift += 7
                if b & 0x80 == 0 { break }
            }
            guard size <= data.count - p else { return nil }
            if type == 1 {
                var reader = BitReader(UnsafeRawBufferPointer(rebasing: data[p..<p + size]))
                return try? parseSequenceHeader(&reader)
            }
            i = p + size
        }
        return nil
    }

    /// AV1 spec §5.5 sequence_header_obu(), up to color_config().
    private static func parseSequenceHeader(_ r: inout BitReader) throws(BitReader.End) -> AV1Codec {
        let profile = UInt8(try r.bits(3))
        _ = try r.bits(1)  // still_picture
        let reduced = try r.flag()
        var level: UInt8 = 0
        var highTier = false
        if reduced {
            level = UInt8(try r.bits(5))
        } else {
            var decoderModelInfo = false
            var bufferDelayLength = 0
            if try r.flag() {  // timing_info_present_flag
                _ = try r.bits(32)  // num_units_in_display_tick
                _ = try r.bits(32)  // time_scale
                if try r.flag() { try r.skipUVLC() }  // equal_picture_interval
                decoderModelInfo = try r.flag()
                if decoderModelInfo {
                    bufferDelayLength = Int(try r.bits(5)) + 1
                    _ = try r.bits(32)  // num_units_in_decoding_tick
                    _ = try r.bits(5)  // buffer_removal_time_length_minus_1
                    _ = try r.bits(5)  // frame_presentation_time_length_minus_1
                }
            }
            let initialDisplayDelay = try r.flag()
            let operatingPoints = Int(try r.bits(5)) + 1
            for point in 0..<operatingPoints {
                _ = try r.bits(12)  // operating_point_idc
                let idx = UInt8(try r.bits(5))
                let tier = idx > 7 ? try r.flag() : false
                if point == 0 {
                    level = idx
                    highTier = tier
                }
                if decoderModelInfo, try r.flag() {
                    _ = try r.bits(bufferDelayLength)  // decoder_buffer_delay
                    _ = try r.bits(bufferDelayLength)  // encoder_buffer_delay
                    _ = try r.bits(1)  // low_delay_mode_flag
                }
                if initialDisplayDelay, try r.flag() { _ = try r.bits(4) }
            }
        }
        let widthBits = Int(try r.bits(4)) + 1
        let heightBits = Int(try r.bits(4)) + 1
        _ = try r.bits(widthBits)
        _ = try r.bits(heightBits)
        if !reduced, try r.flag() {  // frame_id_numbers_present_flag
            _ = try r.bits(4)
            _ = try r.bits(3)
        }
        _ = try r.bits(3)  // use_128x128_superblock, enable_filter_intra, enable_intra_edge_filter
        if !reduced {
            _ = try r.bits(4)  // interintra, masked_compound, warped_motion, dual_filter
            let orderHint = try r.flag()
            if orderHint { _ = try r.bits(2) }  // jnt_comp, ref_frame_mvs
            var forceScreenContentTools: UInt64 = 2
            if try r.flag() == false {  // seq_choose_screen_content_tools
                forceScreenContentTools = try r.bits(1)
            }
            if forceScreenContentTools > 0, try r.flag() == false {  // seq_choose_integer_mv
                _ = try r.bits(1)  // seq_force_integer_mv
            }
            if orderHint { _ = try r.bits(3) }  // order_hint_bits_minus_1
        }
        _ = try r.bits(3)  // enable_superres, enable_cdef, enable_restoration

        // color_config()
        let highBitDepth = try r.flag()
        var bitDepth: UInt8 = highBitDepth ? 10 : 8
        if profile == 2 && highBitDepth { bitDepth = try r.flag() ? 12 : 10 }
        let mono = profile == 1 ? false : try r.flag()
        var codec = AV1Codec(profile: profile, level: level, highTier: highTier, bitDepth: bitDepth)
        codec.monochrome = mono
        var primaries: UInt8 = 2
        var transfer: UInt8 = 2
        var matrix: UInt8 = 2
        if try r.flag() {  // color_description_present_flag
            primaries = UInt8(try r.bits(8))
            transfer = UInt8(try r.bits(8))
            matrix = UInt8(try r.bits(8))
        }
        codec.colorPrimaries = primaries
        codec.transferCharacteristics = transfer
        codec.matrixCoefficients = matrix
        if mono {
            codec.fullRange = try r.flag()
            codec.subsamplingX = true
            codec.subsamplingY = true
            return codec
        }
        if primaries == 1 && transfer == 13 && matrix == 0 {  // sRGB: 4:4:4 full range
            codec.fullRange = true
            codec.subsamplingX = false
            codec.subsamplingY = false
            return codec
        }
        codec.fullRange = try r.flag()
        switch profile {
        case 0:
            codec.subsamplingX = true
            codec.subsamplingY = true
        case 1:
            codec.subsamplingX = false
            codec.subsamplingY = false
        default:
            if bitDepth == 12 {
                codec.subsamplingX = try r.flag()
                codec.subsamplingY = codec.subsamplingX ? try r.flag() : false
            } else {
                codec.subsamplingX = true
                codec.subsamplingY = false
            }
        }
        if codec.subsamplingX && codec.subsamplingY { codec.chromaSamplePosition = UInt8(try r.bits(2)) }
        return codec
    }
}

/// MSB-first bit reader over a byte buffer.
struct BitReader {
    struct End: Error {}

    private let data: UnsafeRawBufferPointer
    private var bit = 0

    init(_ data: UnsafeRawBufferPointer) { self.data = data }

    mutating func bits(_ n: Int) throws(End) -> UInt64 {
        precondition(n <= 64)
        guard n <= data.count * 8 - bit else { throw End() }
        var value: UInt64 = 0
        for _ in 0..<n {
            let byte = data[bit >> 3]
            value = value << 1 | UInt64(byte >> (7 - UInt8(bit & 7)) & 1)
            bit += 1
        }
        return value
    }

    mutating func flag() throws(End) -> Bool { try bits(1) == 1 }

    /// uvlc() (AV1 spec §4.10.3).
    mutating func skipUVLC() throws(End) {
        var zeros = 0
        while try bits(1) == 0 {
            zeros += 1
            guard zeros < 32 else { throw End() }
        }
        _ = try bits(zeros)
    }
}
