// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqtSession

/// What carries an ``IETFSession``: its own raw-QUIC connection (``IETFConnection``), or a
/// WebTransport session a server accepted for MoQ Transport (``SessionConnection``). Loop thread only.
protocol IETFEndpoint: AnyObject {
    /// The session core, once the carrier is set up.
    var moqtCore: MoqtSessionCore? { get }
    /// The QUIC connection underneath (for statistics).
    var connection: QUICConnection? { get }
    /// What the peer is (for messages).
    var peerDescription: String { get }
    /// Raw QUIC or WebTransport.
    var binding: SessionBinding { get }
    /// Runs `handler` once when the session ends; the key removes it.
    func addCloseHandler(_ handler: @escaping () -> Void) -> UInt64
    func removeCloseHandler(_ key: UInt64)
}

extension IETFConnection: IETFEndpoint {
    var moqtCore: MoqtSessionCore? { core }
    var binding: SessionBinding { .quic }
}
