// SPDX-License-Identifier: MIT
import MoqPipeline
import Testing

@Suite("Pipeline: running, bus messages, errors", .timeLimit(.minutes(1)))
struct RunTests {
    @Test("a finite pipeline reaches EOS; its messages are typed and in order")
    func reachesEOS() async throws {
        let p = Pipeline {
            Element("videotestsrc").set("num-buffers", 10)
            Caps("video/x-raw", ["width": 64, "height": 48])
            Element("fakesink", name: "sink")
        }
        #expect(p.description == "videotestsrc num-buffers=10 ! video/x-raw,width=64,height=48 ! fakesink name=sink")
        try p.start()
        try await p.waitForEOS(timeout: .seconds(10))
        let messages = p.collectedMessages
        let eos = try #require(messages.firstIndex(where: { $0.isEOS }))
        let playing = try #require(
            messages.firstIndex {
                if case .stateChanged("sink", _, .playing) = $0 { return true }
                return false
            })
        #expect(playing < eos)
        #expect(!messages.contains(where: { $0.isError }))
        p.stop()
        #expect(!p.isRunning)
        #expect(p.state == .null)
    }

    @Test("run(until:) starts the pipeline and returns the matching message; messages streams the run")
    func runUntil() async throws {
        let p = Pipeline(launch: "audiotestsrc num-buffers=20 ! level post-messages=true interval=10000000 ! fakesink")
        let stream = p.messages  // asked before the run: carries it
        let level = try await p.run(until: {
            if case .element(_, "level", _, _) = $0 { return true }
            return false
        })
        guard case .element(let source, _, let fields, let structure) = level else {
            Issue.record("not an element message: \(level)")
            return
        }
        #expect(source.hasPrefix("level"))
        #expect(fields["timestamp"]?.intValue != nil, "\(structure)")
        #expect(structure.hasPrefix("level,"))
        // A GValueArray of one channel's level in dB.
        if case .list(let rms)? = fields["rms"] {
            #expect(rms.first?.doubleValue != nil)
        } else {
            Issue.record("rms: \(fields)")
        }
        try await p.waitForEOS(timeout: .seconds(10))
        p.stop()
        var sawEOS = false
        for await m in stream where m.isEOS { sawEOS = true }  // finishes at stop()
        #expect(sawEOS)
    }

    @Test("a matcher may read the collected messages, both for messages already collected and for those to come")
    func matcherReadsHistory() async throws {
        let p = Pipeline(launch: "audiotestsrc num-buffers=40 ! level post-messages=true interval=10000000 ! fakesink")
        try p.start()
        // Live: the third level message, counted from inside the matcher (this deadlocked when
        // matchers ran under the message lock).
        let third = try await p.waitForMessage(timeout: .seconds(10)) { m in
            guard case .element(_, "level", _, _) = m else { return false }
            return p.collectedMessages.count(where: { if case .element(_, "level", _, _) = $0 { true } else { false } })
                >= 3
        }
        guard case .element(_, "level", _, _) = third else {
            Issue.record("not a level message: \(third)")
            return
        }
        try await p.waitForEOS(timeout: .seconds(10))
        // From the history: the run is over, the matcher reads the whole list.
        let eos = try await p.waitForMessage(timeout: .seconds(1)) { m in
            m.isEOS && p.collectedMessages.last(where: \.isEOS) != nil
        }
        #expect(eos.isEOS)
        p.stop()
    }

    @Test("a parse error carries the parser's message")
    func parseError() {
        #expect(throws: PipelineError.parse("no element \"nosuchelement\"")) {
            try Pipeline(launch: "videotestsrc ! nosuchelement ! fakesink").start()
        }
        #expect {
            try Pipeline(launch: "videotestsrc ! fakesink name=a ! fakesink").start()
        } throws: { error in
            guard case .parse(let m) = error as? PipelineError else { return false }
            return m.contains("could not link")
        }
    }

    @Test("a failing state change throws the ERROR the element posted")
    func stateChangeError() {
        let p = Pipeline {
            Element("filesrc").set("location", "/nonexistent/file"); Element("fakesink")
        }
        #expect {
            try p.start()
        } throws: { error in
            guard case .stateChange(let m) = error as? PipelineError else { return false }
            return m.contains("ERROR from filesrc") && m.contains("/nonexistent/file")
        }
        #expect(!p.isRunning)
        let error = p.collectedMessages.first(where: \.isError)
        if case .error(_, let domain, let code, _, _)? = error {
            #expect(domain == "gst-resource-error-quark")
            #expect(code > 0)
        } else {
            Issue.record("no error collected: \(p.collectedMessages)")
        }
    }

    @Test("an ERROR while waiting fails the wait with the message")
    func errorWhileWaiting() async throws {
        // identity posts an ERROR on its third buffer, while data flows.
        let p = Pipeline {
            Element("videotestsrc").set("num-buffers", 50)
            Element("identity").set("error-after", 3)
            Element("fakesink")
        }
        do {
            try p.start()
            try await p.waitForEOS(timeout: .seconds(10))
            Issue.record("reached EOS")
        } catch {
            if case .failed(let m) = error { #expect(m.contains("ERROR from")) } else { Issue.record("\(error)") }
        }
        p.stop()
    }

    @Test("waiting for what never comes times out; stop() ends a wait; a cancelled wait throws cancelled")
    func timeoutsAndCancellation() async throws {
        let p = Pipeline(launch: "videotestsrc is-live=true ! fakesink")
        try p.start()
        await #expect(throws: PipelineError.timedOut("end of stream")) {
            try await p.waitForEOS(timeout: .milliseconds(200))
        }
        let cancelled = Task { try await p.waitForEOS(timeout: .seconds(30)) }
        cancelled.cancel()
        await #expect(throws: PipelineError.cancelled) { try await cancelled.value }

        let waiting = Task { try await p.waitForEOS(timeout: .seconds(30)) }
        try await p.waitForState(.playing)
        p.stop()
        await #expect(throws: PipelineError.notRunning) { try await waiting.value }
    }

    @Test("sendEOS drains a live pipeline")
    func sendEOS() async throws {
        let p = Pipeline(launch: "videotestsrc is-live=true ! video/x-raw,width=64,height=48 ! fakesink")
        try p.start()
        try await p.waitForState(.playing)
        #expect(p.runningTime != nil)
        try p.sendEOS()
        try await p.waitForEOS(timeout: .seconds(10))
        p.stop()
        #expect(throws: PipelineError.notRunning) { try p.sendEOS() }
    }

    @Test("a single element gets a pipeline and a bus")
    func singleElement() async throws {
        let p = Pipeline { Element("fakesrc").set("num-buffers", 3) }
        try p.start()
        // fakesrc alone: no sink, so no EOS message; the state change is enough.
        try await p.waitForState(.playing)
        p.stop()
    }
}
