// SPDX-License-Identifier: MIT
import Foundation
import MoqBase
import SessionFuzzHarness
import Testing

/// The session fuzzer's corpus and every input it found failing (Fuzz/FailCases/session),
/// replayed through the same script: each must now pass every invariant. A short run of
/// generated inputs follows, so `make test` fuzzes a little on every run (`make fuzz`
/// runs libFuzzer for real).
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

    /// Inputs of a seeded generator: `SWIFTMOQ_FUZZ_SEED` picks another sequence (the seed
    /// and the failing input are printed, so a failure can be replayed and kept).
    @Test("5,000 generated scripts pass the invariants")
    func generated() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["SWIFTMOQ_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x5EED_0010
        var random = SeededGenerator(seed: seed)
        for n in 0..<5000 {
            let count = Int(random.next() % 2048)
            let input = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let violations = SessionFuzz.run(input)
            guard violations.isEmpty else {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("session-fuzz-\(seed)-\(n)")
                try Data(input).write(to: file)
                Issue.record("seed \(seed), input \(n) (saved to \(file.path)): \(violations)")
                return
            }
        }
    }

    @Test("every MoQ Transport session fuzzer failure case and seed passes the invariants")
    func replayMoqt() throws {
        let files = Self.inputs("FailCases/moqt-session") + Self.inputs("seeds/moqt-session")
        #expect(!files.isEmpty)
        for file in files {
            let violations = MoqtSessionFuzz.run(Array(try Data(contentsOf: file)))
            #expect(violations.isEmpty, "\(file.lastPathComponent): \(violations)")
        }
    }

    @Test("5,000 generated MoQ Transport scripts pass the invariants")
    func generatedMoqt() throws {
        let seed = ProcessInfo.processInfo.environment["SWIFTMOQ_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x5EED_0027
        var random = SeededGenerator(seed: seed)
        for n in 0..<5000 {
            let count = Int(random.next() % 2048)
            let input = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let violations = MoqtSessionFuzz.run(input)
            guard violations.isEmpty else {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "moqt-session-fuzz-\(seed)-\(n)")
                try Data(input).write(to: file)
                Issue.record("seed \(seed), input \(n) (saved to \(file.path)): \(violations)")
                return
            }
        }
    }
}
