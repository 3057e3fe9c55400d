// SPDX-License-Identifier: MIT
import CGStreamer
import Foundation
import MoqCatalog
import MoqInteropSupport
import MoqPipeline
import MoqTestKit
import MoqWire
import SwiftMoQ
import Testing

/// moqsrc's `diagnostics`: a `moq-drop` element message for every discard, with moq-kit's stage
/// and reason (what MoqKit's `Player.diagnostics()` reads).
@Suite("moqsrc diagnostics", .serialized, .timeLimit(.minutes(2)))
struct MoqSrcDiagnosticsTests {
    /// An Opus track whose groups skip three sequences every tenth and carry one malformed frame.
    static func feedWithGaps(_ publisher: CatalogPublisher) -> Task<Void, Never> {
        let track = publisher.broadcast.createTrack("1.opus", info: TrackInfo(priority: 80, maxAgeMs: 2000))
        return Task {
            var sequence: UInt64 = 0
            var timestamp: UInt64 = 0
            var n = 0
            while !Task.isCancelled {
                let payload: Bytes
                if n == 25 {
                    payload = Bytes([0xC0])  // a varint cut short: not a legacy frame
                } else {
                    payload =
                        (try? LegacyFrame(timestamp: timestamp, payload: Bytes([0xFC, 0xFF, 0xFE])).encoded())
                        ?? Bytes([])
                }
                if let group = track.createGroup(sequence: sequence) {
                    group.write(payload, timestamp: timestamp)
                    group.finish()
                }
                n += 1
                sequence += n % 10 == 0 ? 4 : 1
                timestamp += 20_000
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    func drops(_ pipeline: TestPipeline) -> [BusMessage] {
        pipeline.collected.filter { $0.structureName == "moq-drop" }
    }

    @Test("missing groups and a malformed frame: moq-drop with stage, reason and count; none when off")
    func dropMessages() async throws {
        try await withRelay(try localRelay()) { (relay) async throws in
            let publisher = try await CatalogPublisher(relay, path: "gaps")
            defer { publisher.close() }
            var catalog = HangCatalog()
            catalog.set("1.opus", .audio(AudioConfig(codec: "opus", sampleRate: 48000, numberOfChannels: 2)))
            publisher.publish(catalog)
            let feeder = Self.feedWithGaps(publisher)
            defer { feeder.cancel() }
            let on = try TestPipeline(
                "moqsrc name=s \(relay.elementProperties) broadcast=gaps diagnostics=true s.audio_0 ! fakesink")
            let off = try TestPipeline("moqsrc name=s \(relay.elementProperties) broadcast=gaps s.audio_0 ! fakesink")
            #expect(on.play() != GST_STATE_CHANGE_FAILURE)
            #expect(off.play() != GST_STATE_CHANGE_FAILURE)
            try await eventually("missing groups and the malformed frame reported", timeout: .seconds(20)) {
                let reasons = Set(drops(on).compactMap { $0.field("reason") })
                return reasons.contains("missing-sequence") && reasons.contains("invalid-payload")
            }
            let missing = drops(on).filter { $0.field("reason") == "missing-sequence" }
            #expect(missing.allSatisfy { $0.field("stage") == "transport" && $0.field("kind") == "audio" })
            #expect(missing.allSatisfy { $0.field("track") == "1.opus" && Int($0.field("count") ?? "") ?? 0 >= 1 })
            let invalid = drops(on).first { $0.field("reason") == "invalid-payload" }
            #expect(
                invalid?.field("stage") == "transport" && invalid?.field("group") != nil,
                "\(String(describing: invalid))")
            #expect(drops(off).isEmpty)
            on.setState(GST_STATE_NULL)
            off.setState(GST_STATE_NULL)
        }
    }
}

extension BusMessage {
    /// A field of an element message's structure, as serialised (`name=(type)value`).
    func field(_ name: String) -> String? {
        guard let text = structure, let range = text.range(of: " \(name)=(") ?? text.range(of: ",\(name)=(") else {
            return nil
        }
        let rest = text[range.upperBound...]
        guard let close = rest.firstIndex(of: ")") else { return nil }
        return String(rest[rest.index(after: close)...].prefix { $0 != "," && $0 != ";" })
    }
}
