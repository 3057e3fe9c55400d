// SPDX-License-Identifier: MIT
import MoqQUIC
import MoqtWire

/// One server connection whose protocol family is known only once the handshake chose an ALPN:
/// moq-lite (raw or WebTransport, ``SessionConnection``) or IETF MoQ Transport (``IETFConnection``,
/// made then by `makeIETF`). Every later event goes to the one chosen. Loop thread only.
final class FamilyRouter: QUICConnectionDelegate {
    let lite: SessionConnection
    let versions: [MoqtVersion]
    let makeIETF: (QUICConnection, MoqtVersion) -> IETFConnection
    private(set) var ietf: IETFConnection?

    init(
        lite: SessionConnection, versions: [MoqtVersion],
        makeIETF: @escaping (QUICConnection, MoqtVersion) -> IETFConnection
    ) {
        self.lite = lite
        self.versions = versions
        self.makeIETF = makeIETF
    }

    private var target: any QUICConnectionDelegate { ietf ?? lite }

    func quicConnectionDidConnect(_ connection: QUICConnection) {
        guard let alpn = connection.negotiatedALPN, let version = versions.first(where: { $0.alpn == alpn }) else {
            return lite.quicConnectionDidConnect(connection)
        }
        lite.onReady = nil  // its connect timer now finds nothing to time out
        let endpoint = makeIETF(connection, version)
        ietf = endpoint
        endpoint.quicConnectionDidConnect(connection)
    }

    func quicConnection(_ connection: QUICConnection, didOpenStream stream: Int64) {
        target.quicConnection(connection, didOpenStream: stream)
    }

    func quicConnection(
        _ connection: QUICConnection, didReceive data: UnsafeRawBufferPointer, on stream: Int64, fin: Bool
    ) {
        target.quicConnection(connection, didReceive: data, on: stream, fin: fin)
    }

    func quicConnection(_ connection: QUICConnection, didResetStream stream: Int64, code: UInt64) {
        target.quicConnection(connection, didResetStream: stream, code: code)
    }

    func quicConnection(_ connection: QUICConnection, didStopSending stream: Int64, code: UInt64) {
        target.quicConnection(connection, didStopSending: stream, code: code)
    }

    func quicConnection(_ connection: QUICConnection, didCloseStream stream: Int64) {
        target.quicConnection(connection, didCloseStream: stream)
    }

    func quicConnection(_ connection: QUICConnection, didReceiveDatagram data: UnsafeRawBufferPointer) {
        target.quicConnection(connection, didReceiveDatagram: data)
    }

    func quicConnection(_ connection: QUICConnection, streamCreditAvailable bidirectional: Bool) {
        target.quicConnection(connection, streamCreditAvailable: bidirectional)
    }

    func quicConnection(_ connection: QUICConnection, unsentBytesBelow threshold: Int) {
        target.quicConnection(connection, unsentBytesBelow: threshold)
    }

    func quicConnection(_ connection: QUICConnection, didCloseWith reason: QUICCloseReason) {
        target.quicConnection(connection, didCloseWith: reason)
    }
}
