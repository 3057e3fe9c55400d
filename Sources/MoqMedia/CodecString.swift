// SPDX-License-Identifier: MIT
import MoqBase

// WebCodecs codec strings in the exact form the Rust implementation (hang) writes
// and parses. GStreamer's `gst_codec_utils_caps_get_mime_codec` output is parsed
// with these and written back in this form (lowercase avc, unpadded HEVC
// constraint bytes, hang's VP9/AV1 short forms).

/// `avc1.PPCCLL` / `avc3.PPCCLL` (ISO/IEC 14496-15 §E; lowercase hex as hang writes it).
struct H264Codec: Equatable {
    /// True for `avc3` (parameter sets in band).
    var inBand: Bool
    var profile: UInt8
    var constraints: UInt8
    var level: UInt8

    init(inBand: Bool, profile: UInt8, constraints: UInt8, level: UInt8) {
        self.inBand = inBand
        self.profile = profile
        self.constraints = constraints
        self.level = level
    }

    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "avc1" || parts[0] == "avc3", parts[1].utf8.count == 6,
            let value = UInt32(parts[1], radix: 16)
        else { return nil }
        inBand = parts[0] == "avc3"
        profile = UInt8(value >> 16)
        constraints = UInt8(value >> 8 & 0xff)
        level = UInt8(value & 0xff)
    }

    var family: String { inBand ? "avc3" : "avc1" }

    var string: String { family + "." + hex2(profile) + hex2(constraints) + hex2(level) }

    /// The three SPS bytes after the NAL header (what GStreamer's `h264_*` helpers read).
    var spsPrefix: [UInt8] { [profile, constraints, level] }
}

/// `hvc1|hev1.[A-C]?idc.compat.(L|H)level[.constraint…]` (ISO/IEC 14496-15 §E.3), as hang writes it:
/// uppercase hex, constraint bytes without padding and without trailing zero bytes.
struct H265Codec: Equatable {
    /// True for `hev1` (parameter sets may be in band).
    var inBand: Bool
    var profileSpace: UInt8
    var profileIDC: UInt8
    /// general_profile_compatibility_flags as they appear in the bitstream (flag 0 is the top bit).
    var compatibility: UInt32
    var highTier: Bool
    var levelIDC: UInt8
    /// The six bytes starting at general_progressive_source_flag.
    var constraints: [UInt8]

    init(
        inBand: Bool, profileSpace: UInt8, profileIDC: UInt8, compatibility: UInt32, highTier: Bool, levelIDC: UInt8,
        constraints: [UInt8]
    ) {
        self.inBand = inBand
        self.profileSpace = profileSpace
        self.profileIDC = profileIDC
        self.compatibility = compatibility
        self.highTier = highTier
        self.levelIDC = levelIDC
        self.constraints = Array((constraints + [0, 0, 0, 0, 0, 0]).prefix(6))
    }

    /// From the 12 profile_tier_level bytes (general_profile_space … general_level_idc).
    init?(inBand: Bool, profileTierLevel ptl: [UInt8]) {
        guard ptl.count >= 12 else { return nil }
        self.init(
            inBand: inBand, profileSpace: ptl[0] >> 6, profileIDC: ptl[0] & 0x1f,
            compatibility: UInt32(ptl[1]) << 24 | UInt32(ptl[2]) << 16 | UInt32(ptl[3]) << 8 | UInt32(ptl[4]),
            highTier: ptl[0] & 0x20 != 0, levelIDC: ptl[11], constraints: Array(ptl[5..<11]))
    }

    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 4, parts.count <= 10, parts[0] == "hvc1" || parts[0] == "hev1" else { return nil }
        inBand = parts[0] == "hev1"
        var profile = Substring(parts[1])
        profileSpace = 0
        if let first = profile.utf8.first, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "C") {
            profileSpace = first - UInt8(ascii: "A") + 1
            profile = profile.dropFirst()
        }
        guard let idc = UInt8(profile), idc < 32, parts[2].utf8.count <= 8, let reversed = UInt32(parts[2], radix: 16)
        else { return nil }
        profileIDC = idc
        compatibility = reversed.bitReversed
        let level = parts[3]
        guard let tier = level.first, tier == "L" || tier == "H", let levelIDC = UInt8(level.dropFirst()) else {
            return nil
        }
        highTier = tier == "H"
        self.levelIDC = levelIDC
        var constraints = [UInt8](repeating: 0, count: 6)
        for (i, part) in parts.dropFirst(4).enumerated() where !part.isEmpty {
            guard part.utf8.count <= 2, let byte = UInt8(part, radix: 16) else { return nil }
            constraints[i] = byte
        }
        self.constraints = constraints
    }

    var family: String { inBand ? "hev1" : "hvc1" }

    var string: String {
        var s = family + "."
        if profileSpace > 0 { s += String(UnicodeScalar(UInt8(ascii: "A") + profileSpace - 1)) }
        s += "\(profileIDC).\(String(compatibility.bitReversed, radix: 16, uppercase: true))"
        s += ".\(highTier ? "H" : "L")\(levelIDC)"
        let significant = constraints.lastIndex(where: { $0 != 0 }).map { $0 + 1 } ?? 0
        for byte in constraints.prefix(significant) { s += "." + String(byte, radix: 16, uppercase: true) }
        return s
    }

    /// The 12 profile_tier_level bytes (what GStreamer's `h265_*` helpers read).
    var profileTierLevel: [UInt8] {
        [
            profileSpace << 6 | (highTier ? 0x20 : 0) | profileIDC,
            UInt8(compatibility >> 24), UInt8(compatibility >> 16 & 0xff), UInt8(compatibility >> 8 & 0xff),
            UInt8(compatibility & 0xff),
        ] + constraints + [levelIDC]
    }
}

/// `av01.P.LLT.DD[.M.CCC.cp.tc.mc.F]` (AV1 codec ISO-BMFF binding §5), short form when the
/// optional fields hold their defaults, as hang writes it.
struct AV1Codec: Equatable {
    var profile: UInt8
    var level: UInt8
    var highTier: Bool
    var bitDepth: UInt8
    var monochrome = false
    var subsamplingX = true
    var subsamplingY = true
    var chromaSamplePosition: UInt8 = 0
    var colorPrimaries: UInt8 = 1
    var transferCharacteristics: UInt8 = 1
    var matrixCoefficients: UInt8 = 1
    var fullRange = false

    init(profile: UInt8, level: UInt8, highTier: Bool, bitDepth: UInt8) {
        self.profile = profile
        self.level = level
        self.highTier = highTier
        self.bitDepth = bitDepth
    }

    /// From an AV1CodecConfigurationRecord (`av1C`, the `codec_data` of `video/x-av1`).
    init?(av1C: [UInt8]) {
        guard av1C.count >= 4, av1C[0] == 0x81 else { return nil }
        let flags = av1C[2]
        self.init(
            profile: av1C[1] >> 5, level: av1C[1] & 0x1f, highTier: flags & 0x80 != 0,
            bitDepth: 8 + (flags & 0x40 != 0 ? 2 : 0) + (flags & 0x20 != 0 ? 2 : 0))
        monochrome = flags & 0x10 != 0
        subsamplingX = flags & 0x08 != 0
        subsamplingY = flags & 0x04 != 0
        chromaSamplePosition = flags & 0x03
    }

    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4 || parts.count == 10, parts[0] == "av01", parts[1].utf8.count == 1,
            let profile = UInt8(parts[1]), profile <= 2, parts[2].utf8.count == 3,
            let level = UInt8(parts[2].prefix(2)), let tier = parts[2].last, tier == "M" || tier == "H",
            parts[3].utf8.count == 2, let bitDepth = UInt8(parts[3])
        else { return nil }
        self.init(profile: profile, level: level, highTier: tier == "H", bitDepth: bitDepth)
        guard parts.count == 10 else { return }
        let chroma = Array(parts[5].utf8)
        guard parts[4].utf8.count == 1, let mono = UInt8(parts[4]), mono <= 1, chroma.count == 3,
            let x = chroma[0].digit, x <= 1, let y = chroma[1].digit, y <= 1, let position = chroma[2].digit,
            position <= 3, parts[6].utf8.count == 2, let primaries = UInt8(parts[6]), parts[7].utf8.count == 2,
            let transfer = UInt8(parts[7]), parts[8].utf8.count == 2, let matrix = UInt8(parts[8]),
            parts[9].utf8.count == 1, let full = UInt8(parts[9]), full <= 1
        else { return nil }
        monochrome = mono == 1
        subsamplingX = x == 1
        subsamplingY = y == 1
        chromaSamplePosition = position
        colorPrimaries = primaries
        transferCharacteristics = transfer
        matrixCoefficients = matrix
        fullRange = full == 1
    }

    var string: String {
        var s = "av01.\(profile).\(dec2(level))\(highTier ? "H" : "M").\(dec2(bitDepth))"
        let short = AV1Codec(profile: profile, level: level, highTier: highTier, bitDepth: bitDepth)
        if self == short { return s }
        s += ".\(monochrome ? 1 : 0).\(subsamplingX ? 1 : 0)\(subsamplingY ? 1 : 0)\(chromaSamplePosition)"
        s += ".\(dec2(colorPrimaries)).\(dec2(transferCharacteristics)).\(dec2(matrixCoefficients))"
        s += ".\(fullRange ? 1 : 0)"
        return s
    }

    /// The GStreamer `profile` caps string.
    var profileName: String? { ["main", "high", "professional"][safe: Int(profile)] }

    /// The lowest level (seq_level_idx) whose MaxPicSize holds `width`×`height` (AV1 spec
    /// Annex A.3). A lower bound, used only when no sequence header or av1C is at hand.
    static func level(width: Int, height: Int) -> UInt8 {
        let area = width * height
        let levels: [(UInt8, Int)] = [
            (0, 147_456), (1, 278_784), (4, 665_856), (5, 1_065_024), (8, 2_359_296), (12, 8_912_896),
            (16, 35_651_584),
        ]
        return levels.first(where: { area <= $0.1 })?.0 ?? 16
    }
}

/// `vp09.PP.LL.DD[.CC.cp.tc.mc.FF]` (VP9 ISO-BMFF binding, "Codecs Parameter String"), short
/// form when the optional fields hold their defaults, as hang writes it.
struct VP9Codec: Equatable {
    var profile: UInt8
    var level: UInt8
    var bitDepth: UInt8
    var chromaSubsampling: UInt8 = 1
    var colorPrimaries: UInt8 = 1
    var transferCharacteristics: UInt8 = 1
    var matrixCoefficients: UInt8 = 1
    var fullRange = false

    init(profile: UInt8, level: UInt8, bitDepth: UInt8) {
        self.profile = profile
        self.level = level
        self.bitDepth = bitDepth
    }

    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 || parts.count == 9, parts[0] == "vp09" else { return nil }
        var values: [UInt8] = []
        for part in parts.dropFirst() {
            guard part.utf8.count == 2, let v = UInt8(part) else { return nil }
            values.append(v)
        }
        self.init(profile: values[0], level: values[1], bitDepth: values[2])
        guard values.count == 8 else { return }
        guard values[7] <= 1 else { return nil }
        chromaSubsampling = values[3]
        colorPrimaries = values[4]
        transferCharacteristics = values[5]
        matrixCoefficients = values[6]
        fullRange = values[7] == 1
    }

    var string: String {
        var s = "vp09.\(dec2(profile)).\(dec2(level)).\(dec2(bitDepth))"
        if self == VP9Codec(profile: profile, level: level, bitDepth: bitDepth) { return s }
        s += ".\(dec2(chromaSubsampling)).\(dec2(colorPrimaries)).\(dec2(transferCharacteristics))"
        s += ".\(dec2(matrixCoefficients)).\(fullRange ? "01" : "00")"
        return s
    }

    /// The lowest VP9 level whose MaxLumaPictureSize holds `width`×`height` (VP9 spec Annex A),
    /// exactly as the Rust importer derives it (`level_for`): a picture-size lower bound.
    static func level(width: Int, height: Int) -> UInt8 {
        let area = width * height
        let levels: [(UInt8, Int)] = [
            (10, 36_864), (11, 73_728), (20, 122_880), (21, 245_760), (30, 552_960), (31, 983_040),
            (40, 2_228_224), (50, 8_912_896), (60, 35_651_584), (62, 70_254_592),
        ]
        return levels.first(where: { area <= $0.1 })?.0 ?? 62
    }
}

/// `mp4a.40.<audio object type>` (RFC 6381 §3.3).
struct AACCodec: Equatable {
    var objectType: UInt8

    init(objectType: UInt8) { self.objectType = objectType }

    init?(_ text: String) {
        guard text.hasPrefix("mp4a.40."), let aot = UInt8(text.dropFirst(8)), aot > 0 else { return nil }
        objectType = aot
    }

    /// The audio object type of an AudioSpecificConfig (ISO/IEC 14496-3 §1.6.2.1), escape included.
    init?(audioSpecificConfig asc: [UInt8]) {
        guard asc.count >= 2 else { return nil }
        let aot = asc[0] >> 3
        if aot == 31 {
            objectType = 32 + ((asc[0] & 0x07) << 3 | asc[1] >> 5)
        } else if aot == 0 {
            return nil
        } else {
            objectType = aot
        }
    }

    var string: String { "mp4a.40.\(objectType)" }
}

// MARK: - Tables shared with GStreamer's caps vocabulary

/// H.264 `profile` caps strings (as `gst_codec_utils_h264_get_profile` names them) → profile_idc
/// and the constraint flags encoders conventionally set for that profile. Checked against
/// GStreamer in the tests.
let h264Profiles: [String: (idc: UInt8, constraints: UInt8)] = [
    "constrained-baseline": (66, 0xc0), "baseline": (66, 0x00), "main": (77, 0x00), "extended": (88, 0x00),
    "high": (100, 0x00), "progressive-high": (100, 0x08), "constrained-high": (100, 0x0c),
    "high-10": (110, 0x00), "progressive-high-10": (110, 0x08), "high-10-intra": (110, 0x10),
    "high-4:2:2": (122, 0x00), "high-4:2:2-intra": (122, 0x10), "high-4:4:4": (244, 0x00),
    "high-4:4:4-intra": (244, 0x10), "cavlc-4:4:4-intra": (44, 0x00), "multiview-high": (118, 0x00),
    "stereo-high": (128, 0x00), "scalable-baseline": (83, 0x00), "scalable-high": (86, 0x00),
]

// MARK: - Helpers

func hex2(_ v: UInt8) -> String { Hex.encode([v]) }

func dec2(_ v: UInt8) -> String { v < 10 ? "0\(v)" : "\(v)" }

extension UInt8 {
    /// The value of an ASCII digit.
    var digit: UInt8? { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") ? self - UInt8(ascii: "0") : nil }
}

extension UInt32 {
    var bitReversed: UInt32 {
        var v = self
        var r: UInt32 = 0
        for _ in 0..<32 {
            r = r << 1 | v & 1
            v >>= 1
        }
        return r
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
