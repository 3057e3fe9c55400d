// SPDX-License-Identifier: MIT
import MoqQUIC

/// A session of either protocol family as the relay's `/metrics` and `/sessions` see it.
protocol ObservedSession: AnyObject, Sendable {
    /// Statistics now, handed over on the session's loop thread (at once, once it closed).
    func stats(_ completion: @escaping @Sendable (SessionStats) -> Void)
    /// The statistics it closed with (nil while open).
    var finalStats: SessionStats? { get }
    /// The loop it runs on.
    var loop: QUICEventLoop { get }
    /// What it runs over.
    var binding: SessionBinding { get }
    /// The protocol it speaks (`moq-lite-06`, `moqt-16`, `moq-00`).
    var protocolVersion: String { get }
    /// Sends GOAWAY (to `uri`; "" for the same server).
    func goaway(uri: String)
}

extension ObservedSession {
    /// GOAWAY to the same server.
    func goaway() { goaway(uri: "") }
}

extension MoqSession: ObservedSession {
    var protocolVersion: String { version }
}

extension IETFSession: ObservedSession {
    var protocolVersion: String { version.alpn }
}
