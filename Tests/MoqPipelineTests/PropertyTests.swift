// SPDX-License-Identifier: MIT
import GstSwiftMoQ
import MoqPipeline
import Testing

@Suite("Pipeline: element lookup and typed properties", .timeLimit(.minutes(1)))
struct PropertyTests {
    @Test("properties read back as typed values and accept typed values")
    func typedProperties() async throws {
        let p = Pipeline {
            Element("videotestsrc", name: "src").set("is-live", true).set("pattern", "ball")
            Queue(name: "q", maxSizeBuffers: 7)
            Element("identity", name: "id").set("drop-probability", 0.25)
            Element("fakesink", name: "sink").set("sync", false)
        }
        try p.start()
        defer { p.stop() }
        let src = try p.element(named: "src")
        #expect(src.name == "src")
        #expect(src.factoryName == "videotestsrc")
        #expect(try src.property("pattern") == .nick("ball"))
        try src.set("pattern", .nick("snow"))
        #expect(try src.property("pattern") == .nick("snow"))
        try src.set("pattern", "smpte")  // a string is read like gst-launch reads it
        #expect(try src.property("pattern") == .nick("smpte"))
        #expect(try src.property("is-live") == .bool(true))
        #expect(try p.element(named: "q").property("max-size-buffers") == .uint(7))
        #expect(try p.element(named: "q").property("max-size-time") == .uint(1_000_000_000))
        #expect(try p.element(named: "id").property("drop-probability")?.doubleValue == 0.25)
        #expect(try p.element(named: "sink").property("sync") == .bool(false))
        #expect(try p.element(named: "sink").property("name") == .string("sink"))

        #expect(throws: PipelineError.noSuchElement("nope")) { try p.element(named: "nope") }
        #expect(throws: PipelineError.noSuchProperty(element: "src", property: "colour")) {
            try src.property("colour")
        }
        #expect {
            try p.element(named: "id").set("drop-probability", 2.0)
        } throws: { error in
            guard case .invalidValue(_, "drop-probability", _, let reason) = error as? PipelineError else {
                return false
            }
            return reason.contains("range")
        }
        #expect {
            try src.set("pattern", .nick("no-such-pattern"))
        } throws: { error in
            if case .invalidValue = error as? PipelineError { return true }
            return false
        }
        #expect {
            try p.element(named: "q").set("max-size-buffers", -1)
        } throws: { error in
            if case .invalidValue = error as? PipelineError { return true }
            return false
        }
    }

    @Test("moqsrc and moqsink share their connection properties: each one set is read back, on both")
    func sharedConnectionProperties() throws {
        SwiftMoQElements.register()
        let p = Pipeline(launch: "moqsrc name=src ! fakesink  videotestsrc ! x264enc ! h264parse ! moqsink name=sink")
        try p.start(.null)
        defer { p.stop() }
        for name in ["src", "sink"] {
            let element = try p.element(named: name)
            let values: [(String, PipelineValue)] = [
                ("url", .string("moql://relay.example:4443/room")),
                ("tls-fingerprint", .string(String(repeating: "ab", count: 32))),
                ("tls-root-file", .string("/etc/ssl/roots.pem")),
                ("auth-token", .string("secret")),
                ("tls-disable-verify", .bool(true)),
            ]
            for (property, value) in values {
                try element.set(property, value)
                #expect(try element.property(property) == value, "\(name).\(property)")
            }
            #expect(try element.property("status")?.stringValue == "disconnected")
        }
    }

    @Test("the SwiftMoQ elements registered in-process; child-proxy properties by path")
    func swiftMoQElements() throws {
        SwiftMoQElements.register()
        #expect(GStreamer.hasElement("moqsink"))
        let p = Pipeline {
            Element("moqsink", name: "m").set("url", "moql://127.0.0.1:9/anon").set("broadcast", "x")
                .set("sink_0::track", "camera")
            Branch {
                Element("videotestsrc")
                Element("x264enc")
                Element("h264parse")
                Link(to: "m", pad: "sink_0")
            }
        }
        try p.start(.null)
        defer { p.stop() }
        let sink = try p.element(named: "m")
        #expect(try sink.property("sink_0::track") == .string("camera"))
        try sink.set("sink_0::track", "cam2")
        #expect(try sink.property("sink_0::track") == .string("cam2"))
        #expect(try sink.property("status")?.stringValue != nil)
    }
}
