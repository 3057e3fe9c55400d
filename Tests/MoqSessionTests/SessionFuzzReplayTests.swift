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

    /// Replays every kept input of one fuzzer (its failure cases and seeds) through `run`.
    static func replay(_ fuzzer: String, _ run: ([UInt8]) -> [String]) throws {
        let files = inputs("FailCases/\(fuzzer)") + inputs("seeds/\(fuzzer)")
        #expect(!files.isEmpty)
        for file in files {
            let violations = run(Array(try Data(contentsOf: file)))
            #expect(violations.isEmpty, "\(file.lastPathComponent): \(violations)")
        }
    }

    /// Runs 5,000 inputs of a seeded generator through `run`: `SWIFTMOQ_FUZZ_SEED` picks another
    /// sequence (the seed and the failing input are printed, so a failure can be replayed and kept).
    static func generate(_ fuzzer: String, seed defaultSeed: UInt64, _ run: ([UInt8]) -> [String]) throws {
        let seed = ProcessInfo.processInfo.environment["SWIFTMOQ_FUZZ_SEED"].flatMap { UInt64($0) } ?? defaultSeed
        var random = SeededGenerator(seed: seed)
        for n in 0..<5000 {
            let count = Int(random.next() % 2048)
            let input = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let violations = run(input)
            guard violations.isEmpty else {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(fuzzer)-fuzz-\(seed)-\(n)")
                try Data(input).write(to: file)
                Issue.record("seed \(seed), input \(n) (saved to \(file.path)): \(violations)")
                return
            }
        }
    }

    @Test("every session fuzzer failure case and seed passes the invariants")
    func replay() throws { try Self.replay("session", SessionFuzz.run) }

    @Test("5,000 generated scripts pass the invariants")
    func generated() throws { try Self.generate("session", seed: 0x5EED_0010, SessionFuzz.run) }

    @Test("every MoQ Transport session fuzzer failure case and seed passes the invariants")
    func replayMoqt() throws { try Self.replay("moqt-session", MoqtSessionFuzz.run) }

    @Test("5,000 generated MoQ Transport scripts pass the invariants")
    func generatedMoqt() throws { try Self.generate("moqt-session", seed: 0x5EED_0027, MoqtSessionFuzz.run) }
}
