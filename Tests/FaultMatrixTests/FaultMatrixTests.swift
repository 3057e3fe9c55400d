// SPDX-License-Identifier: MIT
import Foundation
import MoqInteropSupport
import Testing

/// `make faults`: every row of ``FaultCase/matrix``, one after another, results in
/// `build/faults/results.json` (`scripts/faults-report.py` turns them into the table and chart
/// of `docs/reliability.md`). Several minutes long, so it runs only when asked for
/// (`SWIFTMOQ_FAULTS=1`; `SWIFTMOQ_FAULTS=<substring>` runs the rows whose name contains it).
/// The short cases of `make test` are `NetworkFaultTests`.
@Suite("Fault matrix (make faults)", .serialized, .peersStopped)
struct FaultMatrixTests {
    static let selection = ProcessInfo.processInfo.environment["SWIFTMOQ_FAULTS"]

    @Test("every row: media through each impairment, measured", .enabled(if: selection != nil))
    func matrix() async throws {
        let filter = Self.selection ?? ""
        let rows = FaultCase.matrix.filter { filter == "1" || $0.name.contains(filter) }
        var results: [FaultResult] = []
        for fault in rows {
            let result = try await FaultRun(fault: fault).run()
            print(Self.describe(result))
            results.append(result)
            // A partial run (some rows) must not replace the full run the report is made from.
            try Self.write(results, to: filter == "1" ? "results.json" : "results-partial.json")
        }
        for r in results {
            #expect(r.framesPlayed > 0, "\(r.name): nothing played")
            #expect(r.errors == 0 || r.relay == "rust", "\(r.name): \(r.firstError ?? "")")
        }
        if let row = results.first(where: { $0.name == FaultCase.lossAndJitterRow }) {
            #expect(row.renderedPercent >= 98 && row.stallRatioPercent <= 2, "\(Self.describe(row))")
        }
        if let row = results.first(where: { $0.name.hasPrefix("NAT rebinding") }) {
            #expect(row.publisherReconnects == 0 && row.playerReconnects == 0, "\(Self.describe(row))")
        }
    }

    static func describe(_ r: FaultResult) -> String {
        func f(_ v: Double?) -> String { v.map { String(format: "%.0f", $0) } ?? "-" }
        return "FAULTS \(r.name) [\(r.relay)]: \(String(format: "%.1f", r.renderedPercent)) % played "
            + "(\(r.framesPlayed)/\(r.framesPublished)), stalls \(r.stalls) "
            + "(\(String(format: "%.1f", r.stallRatioPercent)) %), latency p50 \(f(r.latencyP50Ms)) "
            + "p99 \(f(r.latencyP99Ms)) ms, recovery \(f(r.recoveryMs)) ms, first frame \(f(r.timeToFirstFrameMs)) ms, "
            + "reconnects \(r.publisherReconnects)/\(r.playerReconnects), errors \(r.errors), "
            + "RSS \(String(format: "%.0f", r.rssMB)) MB, proxy drops \(r.proxyDrops), "
            + "data [\(r.dataReader)] \(r.dataDelivered)/\(r.dataSent) (\(r.dataRepeated) repeated)"
    }

    static func write(_ results: [FaultResult], to file: String) throws {
        let directory = try RustPeer.packageRoot().appendingPathComponent("build/faults")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(results).write(to: directory.appendingPathComponent(file))
    }
}
