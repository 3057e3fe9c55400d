// SPDX-License-Identifier: MIT
import MoqPipeline
import MoqTestKit
import Testing

@Suite("Pipeline reports, appsrc/appsink and GstHarness", .timeLimit(.minutes(1)))
struct PipelineHelperTests {
    @Test("a finite run reports EOS and no errors")
    func cleanRun() async throws {
        let report = await Pipeline(launch: "videotestsrc num-buffers=10 ! video/x-raw,width=64,height=48 ! fakesink")
            .runReport()
        try report.expectEOS()
        try report.expectNoErrors()
        #expect(report.messages.contains(where: { $0.isEOS }))
    }

    @Test(
        "SampleRecorder keeps every sample in order as it arrives; stopped, it keeps nothing more and the sink never stalls"
    )
    func sampleRecorder() async throws {
        // A sink that blocks on its first unread buffer (max-buffers=1, drop=false): the recorder
        // must take every sample for the run to reach EOS.
        let p = Pipeline(
            launch: "videotestsrc num-buffers=40 ! video/x-raw,width=32,height=24,framerate=100/1 "
                + "! appsink name=sink sync=false max-buffers=1 drop=false")
        try p.start(.null)
        let sink = try AppSink(p, name: "sink")
        let all = SampleRecorder(sink)
        let times = SampleRecorder(sink) { $0.pts }  // replaces the first recorder's callback
        try p.start()
        try await p.waitForEOS(timeout: .seconds(20))
        #expect(all.count == 0, "a sink has one recorder: the newest")
        #expect(times.count == 40)
        #expect(times.entries == (0..<40).map { Duration.milliseconds(10 * $0) })
        p.stop()

        let q = Pipeline(
            launch:
                "videotestsrc num-buffers=30 ! video/x-raw,format=I420,width=32,height=24,framerate=100/1 ! identity sleep-time=5000 "
                + "! appsink name=sink sync=false max-buffers=1 drop=false")
        try q.start(.null)
        let samples = SampleRecorder(try AppSink(q, name: "sink"))
        try q.start()
        try await eventually("five samples") { samples.count >= 5 }
        samples.stop()
        let kept = samples.count
        try await q.waitForEOS(timeout: .seconds(20))
        #expect(samples.count == kept, "nothing kept after stop")
        #expect(
            samples.entries.allSatisfy {
                $0.bytes.count == 32 * 24 * 3 / 2 && $0.caps?.hasPrefix("video/x-raw") == true
            })
        q.stop()
    }

    @Test("the assertion helpers fail with what was seen instead")
    func failingRun() async throws {
        let report = await Pipeline {
            Element("videotestsrc").set("num-buffers", 50)
            Element("identity").set("error-after", 2)
            Element("fakesink")
        }.runReport()
        guard case .error(let error) = report.outcome else {
            Issue.record("outcome: \(report.outcome)")
            return
        }
        #expect(error.source.hasPrefix("identity"))
        try report.expectError(containing: "as requested")
        #expect {
            try report.expectNoErrors()
        } throws: { error in
            guard case .expectationFailed(let text) = error as? TestKitError else { return false }
            return text.contains("expected no ERROR") && text.contains("identity")
        }
        #expect(throws: TestKitError.self) { try report.expectEOS() }
        #expect(throws: TestKitError.self) { try report.expectWarning(containing: "anything") }
    }

    @Test("stop conditions: a message, the timeout, a pipeline that does not start")
    func stopConditions() async throws {
        let level = await Pipeline(launch: "audiotestsrc is-live=true ! level interval=20000000 ! fakesink")
            .runReport(until: .message({ if case .element(_, "level", _, _) = $0 { true } else { false } }))
        guard case .matched = level.outcome else {
            Issue.record("\(level.outcome)")
            return
        }
        let fields = try level.expectElementMessage(named: "level")
        #expect(fields["rms"] != nil)

        let live = await Pipeline(launch: "videotestsrc is-live=true ! fakesink").runReport(
            until: .timeout, timeout: .milliseconds(300))
        #expect(live.outcome == .timedOut)
        try live.expectNoErrors()

        let broken = await Pipeline(launch: "videotestsrc ! nosuchelement").runReport()
        #expect(broken.outcome == .startFailed(.parse("no element \"nosuchelement\"")))
        #expect(throws: TestKitError.self) { try broken.expectNoErrors() }
    }

    @Test("appsrc → appsink: bytes, times, flags and caps come through; EOS ends the pull")
    func appSourceToSink() async throws {
        let p = Pipeline {
            Element("appsrc", name: "src").set("format", .nick("time")).set(
                "caps", Caps("application/x-test", ["v": 1]))
            Element("appsink", name: "sink").set("sync", false)
        }
        try p.start()
        defer { p.stop() }
        let src = try AppSource(p, name: "src")
        let sink = try AppSink(p, name: "sink")
        let sent = [
            Sample([1, 2, 3], pts: .milliseconds(0), duration: .milliseconds(40)),
            Sample([4], pts: .milliseconds(40), dts: .milliseconds(40), flags: .deltaUnit),
            Sample([], pts: .milliseconds(80), flags: [.deltaUnit, .marker]),
        ]
        for s in sent { try src.push(s) }
        try src.endOfStream()
        let got = try await sink.pull(count: 10)
        #expect(got.map(\.bytes) == sent.map(\.bytes))
        #expect(got.map(\.pts) == sent.map(\.pts))
        #expect(got[0].duration == .milliseconds(40))
        #expect(got[1].dts == .milliseconds(40))
        #expect(got[1].flags.contains(.deltaUnit) && !got[0].flags.contains(.deltaUnit))
        #expect(got[2].flags.isSuperset(of: [.deltaUnit, .marker]))
        #expect(got.allSatisfy { $0.caps == "application/x-test, v=(int)1" })
        #expect(try await sink.pull() == nil)
        #expect(throws: TestKitError.wrongElement(name: "src", expected: "appsink", found: "appsrc")) {
            try AppSink(p, name: "src")
        }
    }

    @Test("pulling from an idle appsink times out")
    func appSinkTimeout() async throws {
        let p = Pipeline(launch: "appsrc name=src format=time ! appsink name=sink")
        try p.start()
        defer { p.stop() }
        await #expect(throws: TestKitError.timedOut("a sample from sink")) {
            _ = try await AppSink(p, name: "sink").pull(timeout: .milliseconds(100))
        }
    }

    @Test("a harness pushes and pulls typed buffers and sees the events")
    func harness() async throws {
        let h = try Harness(element: "identity")
        #expect(h.element.factoryName == "identity")
        h.setSourceCaps("application/x-test")
        try h.push([9, 8, 7], pts: .seconds(1), flags: .discont)
        let out = try await h.pull()
        #expect(out.bytes == [9, 8, 7])
        #expect(out.pts == .seconds(1))
        #expect(out.flags.contains(.discont))
        #expect(out.caps == "application/x-test")
        #expect(h.pushEvent(.eos))
        var types: [String] = []
        while let e = h.tryPullEvent() { types.append(e.type) }
        #expect(types == ["stream-start", "caps", "segment", "eos"])
        #expect(h.tryPull() == nil)

        let chain = try Harness(parse: "identity ! identity")
        chain.setSourceCaps("application/x-test")
        try chain.push([1])
        #expect(try await chain.pull().bytes == [1])

        #expect(throws: TestKitError.self) { try Harness(element: "nosuchelement") }
        #expect(throws: TestKitError.self) { try Harness(element: "fakesrc") }  // no sink pad
        #expect(throws: TestKitError.self) { try Harness(parse: "identity ! nosuchelement") }
    }

    @Test("a harness with a test clock: a synchronised element releases a buffer only when the clock is cranked")
    func testClock() async throws {
        let h = try Harness(parse: "queue ! identity name=sync sync=true")
        h.useTestClock()
        h.setSourceCaps("application/x-test")
        try h.push([5], pts: .seconds(1))
        #expect(h.tryPull() == nil)  // identity waits for 1 s on a clock that does not move by itself
        try await h.crankClock()
        #expect(try await h.pull().bytes == [5])
    }
}
