// SPDX-License-Identifier: MIT
import Foundation
import SessionFuzzHarness
import Testing

/// The session fuzzer's corpus and every input it found failing (Fuzz/FailCases/session),
/// replayed through the same script: each must now pass every invariant.
@Suite struct SessionFuzzReplayTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ directory: String) -> [URL] {
        let dir = root.appendingPathComponent(directory)
        let files = (try? FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)) ?? []
        return files.filter { $0.lastPathComponent != "README" }.sorted { $0.path < $1.path }
    }

    @Test("every session fuzzer failure case and seed passes the invariants")
    func replay() throws {
        let files = Self.inputs("FailCases/session") + Self.inputs("seeds/session")
        #expect(!files.isEmpty)
        for file in files {
            let violations = SessionFuzz.run(Array(try Data(contentsOf: file)))
            #expect(violations.isEmpty, "\(file.lastPathComponent): \(violations)")
        }
    }
}
