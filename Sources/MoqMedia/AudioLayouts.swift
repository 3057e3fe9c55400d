// SPDX-License-Identifier: MIT
import CGStreamer
import CGstAudio

/// FLAC's decoder configuration as hang and WebCodecs carry it: the `fLaC` marker followed by
/// the STREAMINFO metadata block (its 4-byte header and 34 bytes).
enum FLACStreamInfo {
    static let blockLength = 34
    /// `fLaC` + header + STREAMINFO.
    static let descriptionLength = 4 + 4 + blockLength

    /// From flacparse's first `streamheader` buffer: `0x7F "FLAC" major minor count(2)` then the
    /// native `fLaC` marker and the STREAMINFO block. A native stream start (`fLaC…`) is taken too.
    static func description(fromStreamHeader bytes: [UInt8]) -> [UInt8]? {
        let marker = Array("fLaC".utf8)
        let start: Int
        if bytes.count >= 9, bytes[0] == 0x7F, Array(bytes[1..<5]) == Array("FLAC".utf8) {
            start = 9
        } else {
            start = 0
        }
        guard bytes.count >= start + descriptionLength, Array(bytes[start..<start + 4]) == marker else { return nil }
        // Block type 0 (STREAMINFO), length 34.
        let header = bytes[start + 4..<start + 8]
        guard header[header.startIndex] & 0x7F == 0,
            Int(header[header.startIndex + 1]) << 16 | Int(header[header.startIndex + 2]) << 8
                | Int(header[header.startIndex + 3]) == blockLength
        else { return nil }
        var description = Array(bytes[start..<start + descriptionLength])
        // Whether other metadata blocks followed it where it came from is not the decoder's
        // concern: the description carries STREAMINFO alone, not marked last (as flacparse has it).
        description[4] &= 0x7F
        return description
    }

    /// A description as flacparse's `streamheader`: the Ogg FLAC mapping header holding it, with
    /// STREAMINFO marked as the last metadata block (the only header there is).
    static func streamHeader(fromDescription description: [UInt8]) -> [UInt8]? {
        guard let native = Self.description(fromStreamHeader: description) else { return nil }
        var block = native
        block[4] |= 0x80
        return [0x7F] + Array("FLAC".utf8) + [1, 0, 0, 1] + block
    }
}

/// Channel order of hang's `pcm` (and of what moqsrc hands downstream): GStreamer's fallback
/// positions for the count, which for 1–8 channels are WAVE's default order.
enum PCMLayout {
    static func defaultMask(channels: Int) -> UInt64 {
        UInt64(gst_audio_channel_get_fallback_mask(gint(channels)))
    }

    /// Whether `info`'s positions are the default order for its channel count.
    static func isDefaultOrder(_ info: GstAudioInfo) -> Bool {
        let channels = Int(info.channels)
        guard channels > 0, channels <= 64 else { return false }
        var expected = [GstAudioChannelPosition](repeating: GST_AUDIO_CHANNEL_POSITION_INVALID, count: channels)
        guard
            gst_audio_channel_positions_from_mask(gint(channels), guint64(defaultMask(channels: channels)), &expected)
                != 0
        else { return false }
        return withUnsafeBytes(of: info.position) { raw in
            let actual = raw.bindMemory(to: GstAudioChannelPosition.self)
            return (0..<channels).allSatisfy { actual[$0] == expected[$0] }
        }
    }
}
