// SPDX-License-Identifier: MIT
import Foundation
import MoqKit
import Testing

@Suite("MediaFileProbe")
struct MediaFileProbeTests {
    @Test("a file that is not media, and a missing one: an error naming the file")
    func notMedia() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("probe-\(getpid()).txt").path
        try Data("just text\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: MediaFileProbeError.self) { _ = try MediaFileProbe.streams(inFile: path) }
        do {
            _ = try MediaFileProbe.streams(inFile: "/nonexistent/clip.mkv")
            Issue.record("a missing file was probed")
        } catch {
            #expect(error.description.contains("/nonexistent/clip.mkv"), "\(error)")
        }
    }
}
