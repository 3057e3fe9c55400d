// SPDX-License-Identifier: MIT
import Foundation

/// The catalogs of moq-lite-06.md §6.3, verbatim as produced by moq-ffi 0.4.18 (kept once, in
/// `Tests/Interop/catalogs/`, for every test target that reads them).
public enum RustCatalogs {
    /// (a) `publish_video(AVC1, avcC)` + `publish_audio(OPUS, OpusHead)`.
    public static let avc1Opus = file("avc1-opus")
    /// (b) `encode_video(H264, openh264)` + `encode_audio("audio", opus)`.
    public static let avc3Opus = file("avc3-opus")

    private static func file(_ name: String, from source: String = #filePath) -> String {
        let tests = URL(fileURLWithPath: source).deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: tests.appendingPathComponent("Interop/catalogs/\(name).json"), encoding: .utf8))
            ?? ""
    }
}
