// SPDX-License-Identifier: MIT
import Testing

@testable import SwiftMoQ

/// The reconnect loop's decisions on virtual time: no network, no clock, a seeded generator.
@Suite("ReconnectPolicy")
struct ReconnectPolicyTests {
    static let relay = "moql://relay.test:4443/room"
    static let unreachable = MoqError.unreachable("no route to the relay")
    static let timeout = MoqError.timeout("the relay did not answer in time")
    static let lost = SessionCloseReason.transport("idle timeout")

    static func policy(connectTimeout: Duration = .seconds(10), retryAfterLoss: Bool = true) -> ReconnectPolicy {
        ReconnectPolicy(connectTimeout: connectTimeout, retryAfterLoss: retryAfterLoss, relay: relay)
    }

    /// A policy whose first session came up at 0 s and was lost at `t`: past the first connect.
    static func afterLoss(at t: Duration = .seconds(60), random: inout SeededGenerator) -> ReconnectPolicy {
        var policy = policy()
        _ = policy.connected()
        _ = policy.sessionEnded(lost, now: t, using: &random)
        return policy
    }

    /// The wait of a retry (and fails the test for anything else).
    static func wait(_ next: ReconnectPolicy.Next, sourceLocation: SourceLocation = #_sourceLocation) -> Duration {
        guard case .retry(let after, _) = next else {
            Issue.record("expected a retry, got \(next)", sourceLocation: sourceLocation)
            return .zero
        }
        return after
    }

    /// The error a retry reports, if any.
    static func report(_ next: ReconnectPolicy.Next) -> MoqError? {
        guard case .retry(_, let report) = next else { return nil }
        return report
    }

    // MARK: - Backoff and jitter

    @Test("quick failures wait 0.5, 1, 1… s, each drawn from the upper half of its step")
    func backoffSequence() {
        for seed in UInt64(0)..<50 {
            var random = SeededGenerator(seed: seed)
            var policy = Self.policy()
            _ = policy.connected()
            var waits = [Self.wait(policy.sessionEnded(Self.lost, now: .seconds(60), using: &random))]
            for i in 1..<8 {
                waits.append(
                    Self.wait(policy.failed(Self.unreachable, answered: false, now: .seconds(60 + i), using: &random)))
            }
            let steps: [Duration] = [.milliseconds(500)] + Array(repeating: .seconds(1), count: 7)
            for (wait, step) in zip(waits, steps) {
                #expect(wait >= step / 2 && wait <= step, "seed \(seed): \(waits)")
            }
        }
    }

    @Test("jitter is reproducible from a seed, within half and all of its step, and spread across it")
    func jitterBounds() {
        for step in ReconnectingSession.backoff {
            var random = SeededGenerator(seed: 7)
            let waits = (0..<1000).map { _ in ReconnectPolicy.jittered(step, using: &random) }
            #expect(waits.allSatisfy { $0 >= step / 2 && $0 <= step })
            // Spread: clients of a restarted relay do not come back together.
            #expect(waits.min()! < step * 0.55 && waits.max()! > step * 0.95)
            #expect(Set(waits).count > 990)
            var again = SeededGenerator(seed: 7)
            #expect(waits == (0..<1000).map { _ in ReconnectPolicy.jittered(step, using: &again) })
        }
        // The decisions draw from the generator they are given, nothing else.
        func sequence(_ seed: UInt64) -> [ReconnectPolicy.Next] {
            var random = SeededGenerator(seed: seed)
            var policy = Self.afterLoss(random: &random)
            return (0..<6).map { i in
                policy.failed(
                    i % 2 == 0 ? Self.unreachable : Self.timeout, answered: false, now: .seconds(61 + i), using: &random
                )
            }
        }
        #expect(sequence(3) == sequence(3))
        #expect(sequence(3) != sequence(4))
    }

    @Test("an attempt that ran out of time is followed within 100 ms, whether the peer answered or not")
    func retryAfterTimeoutAtOnce() {
        for seed in UInt64(0)..<50 {
            var random = SeededGenerator(seed: seed)
            var policy = Self.policy()
            var waits: [Duration] = []
            for i in 0..<6 {
                let next = policy.failed(Self.timeout, answered: i % 2 == 0, now: .seconds(2 + 2 * i), using: &random)
                waits.append(Self.wait(next))
            }
            #expect(waits.allSatisfy { $0 >= .zero && $0 <= .milliseconds(100) }, "seed \(seed): \(waits)")
            // They still count as retries: a quick failure now waits the backoff's second step.
            let quick = Self.wait(policy.failed(Self.unreachable, answered: false, now: .seconds(14), using: &random))
            #expect(quick >= .milliseconds(500) && quick <= .seconds(1))
        }
        var random = SeededGenerator(seed: 1)
        var policy = Self.afterLoss(random: &random)
        let waits = (0..<200).map { i in
            Self.wait(policy.failed(Self.timeout, answered: false, now: .seconds(62 + 2 * i), using: &random))
        }
        #expect(waits.min()! < .milliseconds(10) && waits.max()! > .milliseconds(90))
    }

    // MARK: - Attempt timeouts

    @Test("attempts start at 2 s and double after each timeout, up to the connect timeout")
    func attemptTimeoutTable() {
        let cap = Duration.seconds(10)
        let limits = (0..<6).map { ReconnectPolicy.attemptTimeout(afterTimeouts: $0, cap: cap) }
        #expect(limits == [.seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10), .seconds(10)])
        // A shorter connect timeout caps the first attempt too; huge streaks neither trap nor grow.
        #expect(ReconnectPolicy.attemptTimeout(afterTimeouts: 0, cap: .seconds(1)) == .seconds(1))
        #expect(ReconnectPolicy.attemptTimeout(afterTimeouts: Int.max, cap: .seconds(30)) == .seconds(30))
        // A GOAWAY successor gets one fresh attempt.
        #expect(ReconnectPolicy.handoverTimeout(connectTimeout: .seconds(10)) == .seconds(2))
        #expect(ReconnectPolicy.handoverTimeout(connectTimeout: .seconds(1)) == .seconds(1))
    }

    @Test("attempts double only while the peer answers but is slow; anything else starts again at 2 s")
    func attemptTimeoutsDoubleWhenAnswered() {
        var random = SeededGenerator(seed: 2)
        var policy = Self.afterLoss(random: &random)
        var t = Duration.seconds(61)
        var limits: [Duration] = []
        func attempt(failing error: MoqError, answered: Bool) {
            let limit = policy.nextAttempt(now: t)
            limits.append(limit)
            t += limit
            t += Self.wait(policy.failed(error, answered: answered, now: t, using: &random))
        }
        for _ in 0..<5 { attempt(failing: Self.timeout, answered: true) }
        attempt(failing: Self.timeout, answered: false)  // the path went silent: a fresh attempt beats a backed-off one
        attempt(failing: Self.timeout, answered: true)
        attempt(failing: Self.unreachable, answered: true)  // not a timeout: starts again too
        attempt(failing: Self.timeout, answered: true)
        #expect(
            limits == [
                .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10),
                .seconds(10), .seconds(2), .seconds(4), .seconds(2),
            ])
        #expect(policy.nextAttempt(now: t) == .seconds(4))
        // Unanswered timeouts through an outage never grow the attempt.
        var outage = Self.afterLoss(random: &random)
        for i in 0..<20 {
            #expect(outage.nextAttempt(now: .seconds(61 + 2 * i)) == .seconds(2))
            _ = outage.failed(Self.timeout, answered: false, now: .seconds(63 + 2 * i), using: &random)
        }
    }

    @Test("within the first connect, the last attempt ends at connectTimeout, which is when failing is reported")
    func firstConnectDeadline() {
        var random = SeededGenerator(seed: 3)
        // Unanswered: 2 s attempts, then what is left of the 10 s.
        var policy = Self.policy()
        var attempts: [(start: Duration, limit: Duration, report: MoqError?)] = []
        var t = Duration.zero
        while t < .seconds(25) {
            let start = t
            let limit = policy.nextAttempt(now: t)
            t += limit
            let next = policy.failed(Self.timeout, answered: false, now: t, using: &random)
            attempts.append((start, limit, Self.report(next)))
            t += Self.wait(next)
        }
        let last = attempts.firstIndex { $0.start + $0.limit == .seconds(10) }
        #expect(last == 4, "\(attempts)")
        if let last {
            // Before it, full attempts whose timeouts go unreported; it is cut to end at the
            // deadline, and its failure is the first reported.
            #expect(attempts[..<last].allSatisfy { $0.limit == .seconds(2) && $0.report == nil }, "\(attempts)")
            #expect(attempts[last].limit < .seconds(2))
            #expect(attempts[last].report == Self.timeout)
            // Past the deadline, attempts are 2 s again and reports are throttled: the next one
            // comes with the first failure 10 s after it.
            #expect(attempts[(last + 1)...].allSatisfy { $0.limit == .seconds(2) })
            let reported = attempts.filter { $0.report != nil }.map { $0.start + $0.limit }
            #expect(reported.count == 2 && reported[0] == .seconds(10), "\(attempts)")
            #expect(reported.last! >= .seconds(20) && reported.last! < .seconds(22), "\(attempts)")
        }

        // Answered but slow: 2, 4, then the 4 s left (not 8).
        var slow = Self.policy()
        #expect(slow.nextAttempt(now: .zero) == .seconds(2))
        _ = slow.failed(Self.timeout, answered: true, now: .seconds(2), using: &random)
        #expect(slow.nextAttempt(now: .seconds(2)) == .seconds(4))
        let second = slow.failed(Self.timeout, answered: true, now: .seconds(6), using: &random)
        #expect(Self.report(second) == nil)
        #expect(slow.nextAttempt(now: .seconds(6)) == .seconds(4))
        #expect(slow.nextAttempt(now: .milliseconds(9_300)) == .milliseconds(700))
        // Within half a second of the deadline an attempt is not cut to nothing: it gets its full time.
        #expect(slow.nextAttempt(now: .milliseconds(9_500)) == .seconds(8))
        #expect(slow.nextAttempt(now: .seconds(12)) == .seconds(8))

        // A first attempt that fails otherwise is reported at once, and ends the deadline's hold.
        var refused = Self.policy()
        let first = refused.failed(Self.unreachable, answered: false, now: .milliseconds(30), using: &random)
        #expect(Self.report(first) == Self.unreachable)
        #expect(refused.nextAttempt(now: .milliseconds(9_000)) == .seconds(2))

        // A connect timeout shorter than an attempt: the first attempt is the whole of it.
        var short = Self.policy(connectTimeout: .seconds(1))
        #expect(short.nextAttempt(now: .zero) == .seconds(1))
        #expect(
            Self.report(short.failed(Self.timeout, answered: false, now: .seconds(1), using: &random)) == Self.timeout)
    }

    // MARK: - Reports

    @Test("a transient error is reported for the first failure, then at most every 10 s")
    func reportThrottling() {
        var random = SeededGenerator(seed: 4)
        var policy = Self.policy()
        _ = policy.connected()
        let ended = policy.sessionEnded(Self.lost, now: .seconds(100), using: &random)
        #expect(Self.report(ended) == .closed("the session with \(Self.relay) ended: idle timeout"))
        var reported: [Duration] = []
        var t = Duration.seconds(100)
        while t < .seconds(131) {
            t += .milliseconds(500)
            let error = t < .seconds(115) ? Self.unreachable : Self.timeout
            if Self.report(policy.failed(error, answered: false, now: t, using: &random)) != nil { reported.append(t) }
        }
        #expect(reported == [.seconds(110), .seconds(120), .seconds(130)])

        // A session in between: its loss is reported at once, however recent the last report.
        _ = policy.connected()
        #expect(Self.report(policy.sessionEnded(Self.lost, now: .seconds(131), using: &random)) != nil)
        #expect(
            Self.report(policy.failed(Self.unreachable, answered: false, now: .seconds(132), using: &random)) == nil)

        // Before any session: the first attempt's failure is reported, then the throttle holds.
        var fresh = Self.policy()
        #expect(Self.report(fresh.failed(Self.unreachable, answered: false, now: .seconds(1), using: &random)) != nil)
        #expect(Self.report(fresh.failed(Self.timeout, answered: false, now: .seconds(4), using: &random)) == nil)
        #expect(Self.report(fresh.failed(Self.timeout, answered: false, now: .seconds(11), using: &random)) != nil)
    }

    // MARK: - Fatal and transient

    @Test("errors retrying cannot fix end the connection; the others are retried")
    func fatalConnectErrors() {
        var random = SeededGenerator(seed: 5)
        let fatal: [MoqError] = [
            .tls("certificate not trusted"), .configuration("bad pin"), .invalidURL("no host"),
            .refused(code: SessionErrorCode.unauthorized.rawValue, reason: "bad token"),
        ]
        for error in fatal {
            var policy = Self.policy()
            #expect(policy.failed(error, answered: true, now: .seconds(1), using: &random) == .fail(error))
            #expect(policy.status == .failed)
        }
        let transient: [MoqError] = [
            Self.unreachable, Self.timeout, .closed("reset"),
            .refused(code: SessionErrorCode.internal.rawValue, reason: "overloaded"),
        ]
        for error in transient {
            var policy = Self.policy()
            guard case .retry = policy.failed(error, answered: false, now: .seconds(11), using: &random) else {
                Issue.record("\(error) should be retried")
                continue
            }
            #expect(policy.status == .connecting)
        }
    }

    @Test("the relay refusing the credentials ends the connection, even when losses are retried")
    func unauthorizedClose() {
        var random = SeededGenerator(seed: 6)
        for retryAfterLoss in [true, false] {
            var policy = Self.policy(retryAfterLoss: retryAfterLoss)
            _ = policy.connected()
            let next = policy.sessionEnded(.remote(.unauthorized, "token expired"), now: .seconds(30), using: &random)
            #expect(next == .fail(.refused(code: SessionErrorCode.unauthorized.rawValue, reason: "token expired")))
            #expect(policy.status == .failed)
        }
        // Closed by the peer with another code: a loss like any other.
        var policy = Self.policy()
        _ = policy.connected()
        #expect(
            Self.wait(policy.sessionEnded(.remote(.internal, "restart"), now: .seconds(30), using: &random)) > .zero)
        #expect(policy.status == .reconnecting)
    }

    @Test("without retryAfterLoss: a failed attempt fails, a graceful end disconnects, any other end fails")
    func oneShot() {
        var random = SeededGenerator(seed: 7)
        var attempt = Self.policy(retryAfterLoss: false)
        #expect(
            attempt.failed(Self.unreachable, answered: false, now: .seconds(1), using: &random)
                == .fail(Self.unreachable))
        #expect(attempt.status == .failed)

        for graceful in [SessionCloseReason.remote(.cancel, ""), .local(.cancel, "done")] {
            var policy = Self.policy(retryAfterLoss: false)
            _ = policy.connected()
            #expect(policy.sessionEnded(graceful, now: .seconds(5), using: &random) == .disconnect)
            #expect(policy.status == .disconnected)
        }

        var lost = Self.policy(retryAfterLoss: false)
        _ = lost.connected()
        #expect(
            lost.sessionEnded(Self.lost, now: .seconds(5), using: &random)
                == .fail(.closed("the session with \(Self.relay) ended: idle timeout")))
        #expect(lost.status == .failed)

        // A graceful end with retries on is reconnected like a loss.
        var retried = Self.policy()
        _ = retried.connected()
        guard case .retry = retried.sessionEnded(.remote(.cancel, ""), now: .seconds(5), using: &random) else {
            Issue.record("a graceful end should be reconnected when retrying")
            return
        }
    }

    // MARK: - Status and sessions

    @Test("status: connecting until the first session, reconnecting after it; the second session is a reconnect")
    func statusTransitions() {
        var random = SeededGenerator(seed: 8)
        var policy = Self.policy()
        var statuses = [policy.status]
        _ = policy.failed(Self.unreachable, answered: false, now: .seconds(1), using: &random)
        statuses.append(policy.status)
        #expect(policy.connected() == .first)
        statuses.append(policy.status)
        _ = policy.sessionEnded(Self.lost, now: .seconds(20), using: &random)
        statuses.append(policy.status)
        _ = policy.failed(Self.unreachable, answered: false, now: .seconds(21), using: &random)
        statuses.append(policy.status)
        #expect(policy.connected() == .reconnect)
        statuses.append(policy.status)
        #expect(policy.connected() == .reconnect)
        #expect(statuses == [.connecting, .connecting, .connected, .reconnecting, .reconnecting, .connected])
    }

    @Test("a session resets the backoff and the attempt time")
    func reconnectResets() {
        for seed in UInt64(0)..<50 {
            var random = SeededGenerator(seed: seed)
            var policy = Self.afterLoss(random: &random)
            for i in 0..<4 { _ = policy.failed(Self.timeout, answered: true, now: .seconds(62 + i), using: &random) }
            #expect(policy.nextAttempt(now: .seconds(70)) == .seconds(10))
            #expect(policy.connected() == .reconnect)
            #expect(policy.nextAttempt(now: .seconds(80)) == .seconds(2))
            let first = Self.wait(policy.sessionEnded(Self.lost, now: .seconds(90), using: &random))
            #expect(first >= .milliseconds(250) && first <= .milliseconds(500), "seed \(seed)")
        }
    }

    // MARK: - Outages

    /// One step of a walk through an outage.
    struct Step: Equatable, CustomStringConvertible {
        var at: Duration
        var what: String
        var description: String { "\(at): \(what)" }
    }

    /// Drives a policy through a blackhole on the path from 0 s until `pathBack`, as the loop
    /// would. The session was up before; the idle timeout (10 s) ends it. An attempt sends its
    /// Initial at its start and again about 1 s later (ngtcp2's first PTO); it succeeds when one
    /// of them goes out on a working path (a round trip on loopback is negligible here), and
    /// otherwise runs out of time unanswered.
    static func outage(until pathBack: Duration, seed: UInt64) -> (
        back: Duration, steps: [Step], policy: ReconnectPolicy
    ) {
        var random = SeededGenerator(seed: seed)
        var policy = policy()
        _ = policy.connected()
        var steps: [Step] = []
        var t = Duration.seconds(10)
        var next = policy.sessionEnded(lost, now: t, using: &random)
        while true {
            guard case .retry(let wait, let report) = next else {
                steps.append(Step(at: t, what: "gave up"))
                return (t, steps, policy)
            }
            steps.append(Step(at: t, what: "\(policy.status), \(report == nil ? "quiet" : "reported"), wait \(wait)"))
            t += wait
            let limit = policy.nextAttempt(now: t)
            let initials = [t, t + .seconds(1)].filter { $0 < t + limit }
            if let answered = initials.first(where: { $0 >= pathBack }) {
                #expect(policy.connected() == .reconnect)
                steps.append(Step(at: answered, what: "attempt of \(limit) answered: back"))
                return (answered, steps, policy)
            }
            steps.append(Step(at: t, what: "attempt of \(limit), Initials lost"))
            t += limit
            next = policy.failed(timeout, answered: false, now: t, using: &random)
        }
    }

    @Test("a 14 s outage, step by step: the session ends at 10 s and the client is back 0.25–0.7 s after the path")
    func fourteenSecondOutage() {
        for seed in UInt64(0)..<200 {
            let (back, steps, policy) = Self.outage(until: .seconds(14), seed: seed)
            // 10 s: the idle timeout ends the session; reported; the first backoff step (0.25–0.5 s).
            // 10.25–10.5 s: a 2 s attempt; its Initials (then and 1 s later) are lost.
            // 12.25–12.5 s: it runs out of time, unanswered; not reported (10 s throttle); again within 100 ms.
            // 12.25–12.6 s: another 2 s attempt, not 4 s: the peer never answered; its Initials are lost too.
            // 14.25–14.6 s: it runs out of time; the next attempt, within 100 ms, finds the path back.
            #expect(steps.count == 6, "seed \(seed): \(steps)")
            guard steps.count == 6 else { continue }
            #expect(steps[0].at == .seconds(10) && steps[0].what.hasPrefix("reconnecting, reported"))
            #expect(steps[1].at >= .milliseconds(10_250) && steps[1].at <= .milliseconds(10_500))
            #expect(steps[1].what == "attempt of 2.0 seconds, Initials lost")
            #expect(steps[2].what.hasPrefix("reconnecting, quiet"))
            #expect(steps[3].what == "attempt of 2.0 seconds, Initials lost")
            #expect(steps[4].at >= .milliseconds(14_250) && steps[4].at <= .milliseconds(14_600))
            #expect(steps[4].what.hasPrefix("reconnecting, quiet"))
            #expect(steps[5].what == "attempt of 2.0 seconds answered: back")
            #expect(back >= .milliseconds(14_250) && back <= .milliseconds(14_700), "seed \(seed): \(steps)")
            #expect(policy.status == .connected)
        }
    }

    @Test("after any outage past the idle timeout, the client is back within 1.1 s of the path")
    func outagesOfAnyLength() {
        for tenths in 101...600 {
            let pathBack = Duration.milliseconds(100 * tenths)
            let (back, steps, _) = Self.outage(until: pathBack, seed: UInt64(tenths))
            #expect(back >= pathBack && back - pathBack <= .milliseconds(1_100), "\(pathBack): \(steps)")
        }
    }
}
