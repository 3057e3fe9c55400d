// SPDX-License-Identifier: MIT
import MoqModel
import MoqSync
import MoqWire
import Testing

/// What a racing connection attempt serves: nothing until it has won, then all of its origin, in
/// order with the changes that follow.
@Suite struct GatedDirectoryTests {
    final class Events: @unchecked Sendable {
        let seen = Lock<[OriginEvent]>([])
        var handler: @Sendable (OriginEvent) -> Void { { [self] e in seen.withLock { $0.append(e) } } }
        var paths: [String] {
            seen.withLock {
                $0.map {
                    switch $0 {
                    case .announced(let p, _): "+\(p)"
                    case .unannounced(let p): "-\(p)"
                    }
                }
            }
        }
    }

    @Test("closed: no broadcast is found and nothing is announced, whatever the origin does")
    func closedShowsNothing() {
        let origin = Origin()
        origin.publish(BroadcastProducer(path: "a"))
        let gate = GatedDirectory(origin)
        let events = Events()
        let (_, current) = gate.observe(prefix: "", events.handler)
        origin.publish(BroadcastProducer(path: "b"))
        #expect(current.isEmpty && events.paths.isEmpty)
        #expect(gate.broadcast("a") == nil && gate.broadcast("b") == nil)
    }

    @Test("opened: earlier observations get what the origin holds, then its changes; later ones observe it directly")
    func openReplaysThenForwards() {
        let origin = Origin()
        origin.publish(BroadcastProducer(path: "room/a"))
        let gate = GatedDirectory(origin)
        let events = Events()
        _ = gate.observe(prefix: "room", events.handler)
        origin.publish(BroadcastProducer(path: "other/x"))
        gate.open()
        #expect(events.paths == ["+room/a"])
        let b = BroadcastProducer(path: "room/b")
        origin.publish(b)
        origin.unpublish(b)
        #expect(events.paths == ["+room/a", "+room/b", "-room/b"])
        #expect(gate.broadcast("room/a") != nil)
        let later = Events()
        let (_, current) = gate.observe(prefix: "", later.handler)
        #expect(current.map(\.path) == ["other/x", "room/a"])
    }

    @Test("a change that comes during the replay is delivered after it, not before")
    func changeDuringReplayWaits() {
        let origin = Origin()
        origin.publish(BroadcastProducer(path: "a"))
        origin.publish(BroadcastProducer(path: "b"))
        let gate = GatedDirectory(origin)
        let events = Events()
        let publishedDuringReplay = Lock(false)
        _ = gate.observe(prefix: "") { event in
            events.handler(event)
            // The first replayed announcement makes the origin change (on this thread, as a
            // publisher's thread would meanwhile).
            let first = publishedDuringReplay.withLock { done in
                defer { done = true }
                return !done
            }
            if first {
                origin.publish(BroadcastProducer(path: "c"))
            }
        }
        gate.open()
        #expect(events.paths == ["+a", "+b", "+c"])
    }

    @Test("an observation stopped before the gate opens is never registered with the origin")
    func stoppedBeforeOpen() {
        let origin = Origin()
        let gate = GatedDirectory(origin)
        let events = Events()
        let (token, _) = gate.observe(prefix: "", events.handler)
        gate.stopObserving(token)
        gate.open()
        origin.publish(BroadcastProducer(path: "a"))
        #expect(events.paths.isEmpty)
    }
}
