// SPDX-License-Identifier: MIT
import Testing

@testable import MoqPlayback

@Suite("BroadcastTarget: which broadcast plays next")
struct BroadcastTargetTests {
    @Test("a prefix follow plays the announced broadcasts in announcement order")
    func prefix() {
        let target = BroadcastTarget.prefix("radio/")
        #expect(target.matches("radio/a") && !target.matches("tv/a"))
        #expect(target.next(after: nil, active: ["radio/b", "radio/a"]) == "radio/b")
        #expect(target.next(after: "radio/b", active: ["radio/b", "radio/a"]) == "radio/a")
        #expect(target.next(after: "radio/b", active: ["radio/b"]) == nil)
    }

    @Test("a queue plays in its own order, whatever the announcements' order; items before the current one are done")
    func queue() {
        let target = BroadcastTarget.queue(["show/1", "show/2", "/show/3/"])
        #expect(target.matches("show/3") && !target.matches("show/4"))
        #expect(target.next(after: nil, active: ["show/3", "show/2"]) == "show/2")
        #expect(target.next(after: "show/2", active: ["show/1", "show/3"]) == "show/3")
        // Item 2 is not announced (yet): 3 is next; after the last item nothing is.
        #expect(target.next(after: "show/1", active: ["show/3"]) == "show/3")
        #expect(target.next(after: "show/3", active: ["show/1", "show/2"]) == nil)
    }

    @Test("an exact broadcast has no next")
    func exact() {
        let target = BroadcastTarget.exact("cam")
        #expect(target.next(after: nil, active: ["cam"]) == "cam")
        #expect(target.next(after: "cam", active: ["cam"]) == nil)
        #expect(!target.follows)
    }
}
