// SPDX-License-Identifier: MIT

/// Every decision of ``ReconnectingSession``'s reconnect loop, without I/O: how long the next
/// attempt may take, what a failed attempt or a session's end means (give up, or try again after
/// how long), which failures are reported, and the status the connection shows meanwhile.
///
/// It has no clock and no randomness of its own: time comes in as the time since the connection
/// started, and jitter from the generator each decision is given, so that tests walk it on virtual
/// time with a `SeededGenerator`. The loop that drives it connects, follows the session, sleeps for
/// what it says and tells the listeners.
///
/// The pacing is for recovery, not politeness (ARCHITECTURE.md): attempts of 2 s, doubled only
/// while the peer answers but is slow; an attempt that ran out of time is followed at once; quick
/// failures wait 0.5, 1, 1… s (jittered); a transient error is reported once, then at most every
/// ``ReconnectingSession/transientReportInterval``.
struct ReconnectPolicy: Sendable {
    /// What follows a failed attempt or the end of a session.
    enum Next: Sendable, Equatable {
        /// Try again after this wait, reporting `report` first (``ReconnectingSession/Handlers/transientError``)
        /// when it is not nil. ``ReconnectPolicy/status`` is now `connecting` or `reconnecting`.
        case retry(after: Duration, report: MoqError?)
        /// Retrying cannot help: the connection has failed with this error. ``ReconnectPolicy/status`` is now `failed`.
        case fail(MoqError)
        /// The session ended gracefully and is not reconnected. ``ReconnectPolicy/status`` is now `disconnected`.
        case disconnect
    }

    /// The longest an attempt may take (the options' `connectTimeout`), and the first connect's deadline.
    let connectTimeout: Duration
    /// Whether a lost session is reconnected (``ReconnectingSession/retryAfterLoss``).
    let retryAfterLoss: Bool
    /// The relay as errors name it (a redacted URL: no token).
    let relay: String

    /// The status the connection shows after the last decision.
    private(set) var status = ReconnectingSession.Status.connecting
    /// Whether a session has come up: later ones are reconnects, and failures are reported as such.
    private(set) var everConnected = false
    /// Retries since the last session (or the start): where in ``ReconnectingSession/backoff`` the next wait is.
    private var retries = 0
    /// Attempts in a row that timed out although the peer answered: each doubles the next attempt's time.
    private var answeredTimeouts = 0
    /// When a transient error was last reported; nil since the last session (or the start).
    private var lastReport: Duration?

    /// Below this much time left before the first connect's deadline, the last attempt is not cut
    /// short to end at it: it gets its full time, and its failure is reported as any later one.
    static let shortestCutAttempt: Duration = .milliseconds(500)
    /// An attempt that ran out of time is followed after a wait drawn from this range, in milliseconds.
    static let retryAfterTimeout: ClosedRange<Int> = 0...100

    init(connectTimeout: Duration, retryAfterLoss: Bool, relay: String) {
        self.connectTimeout = connectTimeout
        self.retryAfterLoss = retryAfterLoss
        self.relay = relay
    }

    /// The time allowed to the attempt after `timedOut` attempts in a row ran out of time
    /// although the peer answered: 2 s, doubled for each, up to `cap`.
    static func attemptTimeout(afterTimeouts timedOut: Int, cap: Duration) -> Duration {
        min(cap, ReconnectingSession.reconnectAttemptTimeout * (1 << min(timedOut, 8)))
    }

    /// The time allowed to the successor of a session told to go away: one fresh attempt. A relay
    /// that is shutting down is often gone before it answers, and an attempt whose Initial went
    /// unanswered backs off; the reconnect loop does better.
    static func handoverTimeout(connectTimeout: Duration) -> Duration {
        attemptTimeout(afterTimeouts: 0, cap: connectTimeout)
    }

    /// A wait of between half and all of `delay` ("equal jitter"): reconnecting clients spread out.
    static func jittered(_ delay: Duration, using random: inout some RandomNumberGenerator) -> Duration {
        delay * Double.random(in: 0.5...1.0, using: &random)
    }

    /// Until the first session, or the first failure reported: the first connect reports failing
    /// only once `connectTimeout` has passed (as one long attempt would), though it makes shorter
    /// attempts within that time.
    private var withinFirstConnect: Bool { !everConnected && lastReport == nil }

    /// How long the attempt starting `now` (the time since the connection started) may take.
    /// Within the first connect's time, the last attempt ends at its deadline.
    func nextAttempt(now: Duration) -> Duration {
        let limit = Self.attemptTimeout(afterTimeouts: answeredTimeouts, cap: connectTimeout)
        let remaining = connectTimeout - now
        guard withinFirstConnect, remaining > Self.shortestCutAttempt else { return limit }
        return min(limit, remaining)
    }

    /// An attempt failed with `error` at `now`; `answered` says whether the peer sent anything.
    /// Errors retrying cannot fix, and any failure when ``retryAfterLoss`` is false, end the connection.
    mutating func failed(
        _ error: MoqError, answered: Bool, now: Duration, using random: inout some RandomNumberGenerator
    ) -> Next {
        let timedOut = if case .timeout = error { true } else { false }
        // Only a path that answers but is slow earns a longer attempt: through an outage a fresh
        // 2 s attempt beats one whose retransmissions have backed off.
        answeredTimeouts = timedOut && answered ? answeredTimeouts + 1 : 0
        if error.isFatal || !retryAfterLoss { return fail(error) }
        return retry(after: error, timedOut: timedOut, now: now, using: &random)
    }

    /// A session came up: the backoff, the attempt time and the report throttle start again.
    /// Returns how it came up (``ReconnectingSession/SessionStart/reconnect`` after the first).
    mutating func connected() -> ReconnectingSession.SessionStart {
        let start: ReconnectingSession.SessionStart = everConnected ? .reconnect : .first
        everConnected = true
        retries = 0
        answeredTimeouts = 0
        lastReport = nil
        status = .connected
        return start
    }

    /// The session ended with `reason` at `now`. The relay refusing the credentials ends the
    /// connection; without ``retryAfterLoss`` so does any end, gracefully or as a failure.
    mutating func sessionEnded(
        _ reason: SessionCloseReason, now: Duration, using random: inout some RandomNumberGenerator
    ) -> Next {
        if case .remote(let code, let text) = reason, code == .unauthorized {
            return fail(.refused(code: code.rawValue, reason: text))
        }
        let ended = MoqError.closed("the session with \(relay) ended: \(reason)")
        guard retryAfterLoss else {
            guard reason.isGraceful else { return fail(ended) }
            status = .disconnected
            return .disconnect
        }
        return retry(after: ended, timedOut: false, now: now, using: &random)
    }

    private mutating func fail(_ error: MoqError) -> Next {
        status = .failed
        return .fail(error)
    }

    /// The wait before the next attempt, and whether `error` is reported. An attempt that ran out
    /// of time has waited already: the next one starts at once (an Initial goes out at each
    /// attempt's start and about 1 s later, so a path that returns is tried within about a
    /// second). Quick failures wait for the backoff.
    private mutating func retry(
        after error: MoqError, timedOut: Bool, now: Duration, using random: inout some RandomNumberGenerator
    ) -> Next {
        let report = reports(error, now: now) ? error : nil
        status = everConnected ? .reconnecting : .connecting
        let backoff = ReconnectingSession.backoff
        let delay =
            timedOut
            ? .milliseconds(Int.random(in: Self.retryAfterTimeout, using: &random))
            : Self.jittered(backoff[min(retries, backoff.count - 1)], using: &random)
        retries += 1
        return .retry(after: delay, report: report)
    }

    /// Whether a transient `error` at `now` is reported: the first failure after a session (or
    /// the first attempt's), then at most once per ``ReconnectingSession/transientReportInterval``;
    /// a first connect's attempts timing out are not, before its deadline.
    private mutating func reports(_ error: MoqError, now: Duration) -> Bool {
        if withinFirstConnect, case .timeout = error, now < connectTimeout { return false }
        if let last = lastReport, now - last < ReconnectingSession.transientReportInterval { return false }
        lastReport = now
        return true
    }
}
