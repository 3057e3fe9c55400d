// SPDX-License-Identifier: MIT
import MoqPipeline
import Testing

@Suite("Pipeline builder: rendering")
struct BuilderTests {
    @Test("the README example renders to the hand-written description")
    func readmeExample() {
        let p = Pipeline {
            Element("videotestsrc").set("is-live", true).set("pattern", "smpte")
            Caps("video/x-raw", ["format": "I420", "width": 1280, "height": 720, "framerate": Fraction(30, 1)])
            Element("x264enc").set("tune", "zerolatency").set("key-int-max", 60)
            Element("h264parse")
            Element("moqsink", name: "moq").set("url", "moql://localhost:4443/anon").set("broadcast", "room/cam")
            Branch {
                Element("audiotestsrc").set("is-live", true)
                Element("opusenc")
                Link(to: "moq", pad: "sink_1")
            }
        }
        #expect(
            p.description
                == "videotestsrc is-live=true pattern=smpte ! video/x-raw,format=I420,width=1280,height=720,framerate=30/1"
                + " ! x264enc tune=zerolatency key-int-max=60 ! h264parse"
                + " ! moqsink name=moq url=moql://localhost:4443/anon broadcast=room/cam"
                + " audiotestsrc is-live=true ! opusenc ! moq.sink_1")
        #expect(p.chains.count == 2)
    }

    @Test("a video ladder: a tee, a queue, a scaled x264 branch per rung into moqsink's pads, named")
    func ladder() {
        let ladder = VideoLadder(
            rungs: [
                .init(track: "hi", width: 320, height: 180, kbps: 600),
                .init(track: "lo", width: 160, height: 90, kbps: 150),
            ])
        let p = Pipeline {
            Element("moqsink", name: "moq").naming(ladder)
            Branch {
                Element("videotestsrc")
                ladder
            }
        }
        #expect(
            p.description.hasPrefix("moqsink name=moq sink_0::track=hi sink_1::track=lo videotestsrc ! tee name=ladder")
        )
        #expect(p.description.contains("ladder. ! queue ! videoscale ! video/x-raw,width=160,height=90,format=I420"))
        #expect(p.description.contains("bitrate=150") && p.description.contains("! moq.sink_1"))
        #expect(p.chains.count == 4)
    }

    @Test("values: booleans, integers, doubles, fractions, nicks, flags, durations, enums")
    func values() {
        enum Tune: String, PipelineEnum { case zerolatency }
        let e = Element("x")
            .set("b", false).set("i", -3).set("u", UInt64(7)).set("d", 0.5).set("d2", 2.0).set("f", Float(0.1))
            .set("fr", Fraction(30000, 1001)).set("n", .nick("veryfast")).set("fl", .flags(["video", "audio"]))
            .set("t", Duration.milliseconds(200)).set("tune", Tune.zerolatency)
        #expect(
            e.description
                == "x b=false i=-3 u=7 d=0.5 d2=2.0 f=0.1 fr=30000/1001 n=veryfast fl=video+audio t=200000000 tune=zerolatency"
        )
    }

    @Test("strings are quoted only when they must be")
    func stringQuoting() {
        let e = Element("filesink")
            .set("a", "moql://relay.example:4443/anon?jwt=x.y-z")
            .set("b", "hello world").set("c", "a,b").set("d", "say \"hi\"").set("e", "a!b").set("f", "")
            .set("g", "NULL").set("h", "back\\slash").set("i", "ends\\")
        #expect(
            e.description
                == #"filesink a=moql://relay.example:4443/anon?jwt=x.y-z b="hello world" c="a,b" d="say \"hi\"" e="a!b" f="" g="\"NULL\"" h="back\\slash" i="\"ends\\\\\"""#
        )
    }

    @Test("caps fields: bare words, typed quoting, lists, ranges, features")
    func capsRendering() {
        let c = Caps("video/x-raw", features: ["memory:SystemMemory"], ["format": "I420", "w": 1280, "name": "a b"])
            .set("alt", .list(["I420", "NV12"])).set("r", .range(.int(1), .int(30))).set("flag", true)
            .set("word", "yes").set("num", "42").set("big", Int64(1) << 40).set("u", UInt32(3))
        #expect(
            c.description
                == #"video/x-raw(memory:SystemMemory),format=I420,w=1280,name=(string)"a b",alt={I420,NV12},r=[1,30],flag=true,word=(string)"yes",num=(string)"42",big=(gint64)1099511627776,u=(uint)3"#
        )
        #expect(Caps("video/x-h264,stream-format=avc").description == "video/x-h264,stream-format=avc")
    }

    @Test("a tee fans out into branches that start at the tee, in order, after the chain")
    func teeBranches() {
        let p = Pipeline {
            Element("audiotestsrc")
            Tee(name: "t") {
                Branch {
                    Queue(); Element("fakesink", name: "a")
                }
                Branch {
                    Queue(maxSizeBuffers: 1, leaky: .downstream); Element("fakesink", name: "b")
                }
            }
        }
        #expect(
            p.description
                == "audiotestsrc ! tee name=t t. ! queue ! fakesink name=a t. ! queue max-size-buffers=1 leaky=downstream ! fakesink name=b"
        )
        let queued = Pipeline {
            Element("audiotestsrc")
            Tee(name: "t", queueEachBranch: true) {
                Branch { Element("fakesink") }
                Branch {
                    From("t", pad: "src_5"); Element("fakesink")
                }
            }
        }
        #expect(queued.description == "audiotestsrc ! tee name=t t. ! queue ! fakesink t.src_5 ! fakesink")
    }

    @Test("if, if/else, for and fragments build like any Swift block")
    func controlFlow() {
        func encoder(_ h265: Bool) -> Fragment {
            Fragment {
                if h265 {
                    Element("x265enc")
                    Element("h265parse")
                } else {
                    Element("x264enc")
                    Element("h264parse")
                }
            }
        }
        let withAudio = false
        let p = Pipeline {
            Element("videotestsrc")
            for i in 0..<2 { Element("identity", name: "id\(i)") }
            encoder(true)
            if withAudio { Element("never") }
            Element("fakesink")
        }
        #expect(
            p.description == "videotestsrc ! identity name=id0 ! identity name=id1 ! x265enc ! h265parse ! fakesink")
    }

    @Test("setting a property twice keeps its place; set(_:ifPresent:) skips nil")
    func propertyOrder() {
        let pin: String? = nil
        let e = Element("moqsink").set("url", "a").set("broadcast", "b").set("url", "c")
            .set("tls-fingerprint", ifPresent: pin).set("auth-token", ifPresent: Optional("t"))
        #expect(e.description == "moqsink url=c broadcast=b auth-token=t")
        #expect(e["url"] == .string("c"))
        #expect(e["tls-fingerprint"] == nil)
    }
}
