// SPDX-License-Identifier: MIT
import CGStreamer
import MoqPipeline
import Testing

/// What the builder writes is what GStreamer's parser reads back, for strings that need quoting.
@Suite("Pipeline builder: quoting checked against the real parser")
struct EscapingTests {
    static let tricky = [
        "plain", "with space", "a,b", "a!b", "say \"hi\"", "'single'", "back\\slash", "ends\\", "\\\\",
        "\"quoted\"", "\"", "NULL", "", "a;b", "x=y", "tab\there", "é ü", "a\\\" b", "!", "mo.sink_0", "-1", "(x)",
    ]

    @Test("property strings round-trip through gst_parse_launch", arguments: tricky)
    func propertyString(_ value: String) throws {
        let p = Pipeline {
            Element("fakesrc")
            Element("filesink", name: "f").set("location", value)
            Branch {
                Element("fakesrc")
                Element("filesink", name: "g").set("location", "after")
            }
        }
        try p.start(.null)
        defer { p.stop() }
        #expect(try p.element(named: "f").property("location") == .string(value), "\(p.description)")
        // The next chain was not swallowed by the quoting.
        #expect(try p.element(named: "g").property("location") == .string("after"))
    }

    @Test(
        "caps string fields round-trip in a link filter and in a caps property",
        arguments: tricky.filter { !$0.isEmpty })
    func capsString(_ value: String) throws {
        let caps = Caps("video/x-raw", ["s": value, "w": 320])
        let p = Pipeline {
            Element("fakesrc")
            caps
            Element("fakesink", name: "sink")
            Branch {
                Element("fakesrc")
                Element("capsfilter", name: "cf").set("caps", caps)
                Element("fakesink")
            }
        }
        try p.start(.null)
        defer { p.stop() }
        let fromProperty = try p.element(named: "cf").property("caps")
        #expect(Self.field("s", of: fromProperty) == value, "\(p.description)")
        let fromLink = try Self.linkFilter(p, before: "sink")
        #expect(Self.field("s", of: fromLink) == value, "\(p.description)")
        #expect(Self.field("w", of: fromLink) == "320")
    }

    @Test(
        "words the caps parser would retype stay strings",
        arguments: ["true", "No", "t", "inf", "nan", "42", "1/2", "dead+beef", "a:b", "0x10"])
    func retypedWords(_ value: String) throws {
        let p = Pipeline {
            Element("fakesrc")
            Element("capsfilter", name: "cf").set("caps", Caps("x/y", ["s": value]))
            Element("fakesink")
        }
        try p.start(.null)
        defer { p.stop() }
        #expect(Self.field("s", of: try p.element(named: "cf").property("caps")) == value, "\(p.description)")
    }

    /// The caps of the capsfilter the parser inserted in front of `element`.
    static func linkFilter(_ p: Pipeline, before element: String) throws -> PipelineValue? {
        let sink = try p.element(named: element)
        let pad = gst_element_get_static_pad(sink.object.pointer, "sink")!
        defer { gst_object_unref(pad) }
        let peer = gst_pad_get_peer(pad)!
        defer { gst_object_unref(peer) }
        let filter = gst_pad_get_parent_element(peer)!
        return try ElementHandle(owning: filter).property("caps")
    }

    /// A field of caps read back from GStreamer (`gst_structure_get_string`, or the number as text).
    static func field(_ name: String, of value: PipelineValue?) -> String? {
        guard case .caps(let caps)? = value, let parsed = gst_caps_from_string(caps.description) else { return nil }
        defer { gst_caps_unref(parsed) }
        let s = gst_caps_get_structure(parsed, 0)!
        if let text = gst_structure_get_string(s, name) { return String(cString: text) }
        var i: gint = 0
        if gst_structure_get_int(s, name, &i) != 0 { return String(i) }
        return nil
    }
}
