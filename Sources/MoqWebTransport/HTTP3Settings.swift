// SPDX-License-Identifier: MIT
import MoqWire

/// An HTTP/3 SETTINGS frame's parameters (RFC 9114 §7.2.4), in order, with the ones WebTransport
/// needs named.
public struct HTTP3Settings: Sendable, Equatable {
    public static let qpackMaxTableCapacity: UInt64 = 0x01
    public static let maxFieldSectionSize: UInt64 = 0x06
    public static let qpackBlockedStreams: UInt64 = 0x07
    public static let enableConnectProtocol: UInt64 = 0x08
    public static let h3Datagram: UInt64 = 0x33
    /// The draft value of H3_DATAGRAM some peers still send.
    public static let h3DatagramDraft04: UInt64 = 0xffd277
    public static let webTransportMaxSessions: UInt64 = 0xc671_706a
    /// WebTransport draft-02 "enabled" and its max-sessions sibling (Chrome and moq-dev send them).
    public static let webTransportEnabledDraft02: UInt64 = 0x2b60_3742
    public static let webTransportMaxSessionsDraft02: UInt64 = 0x2b60_3743

    /// The most parameters kept from a peer.
    public static let maxParameters = 64

    public private(set) var parameters: [(id: UInt64, value: UInt64)]

    public init(_ parameters: [(id: UInt64, value: UInt64)] = []) { self.parameters = parameters }

    public static func == (a: HTTP3Settings, b: HTTP3Settings) -> Bool {
        a.parameters.map(\.id) == b.parameters.map(\.id) && a.parameters.map(\.value) == b.parameters.map(\.value)
    }

    /// What a WebTransport endpoint sends (the values moq-dev's Rust server and client send):
    /// extended CONNECT, HTTP datagrams (both code points), WebTransport sessions (both drafts).
    public static func webTransport(maxSessions: UInt64 = 1) -> HTTP3Settings {
        HTTP3Settings([
            (qpackMaxTableCapacity, 0), (qpackBlockedStreams, 0), (enableConnectProtocol, 1), (h3Datagram, 1),
            (h3DatagramDraft04, 1), (webTransportMaxSessions, maxSessions),
            (webTransportMaxSessionsDraft02, maxSessions),
            (webTransportEnabledDraft02, 1),
        ])
    }

    /// The value of a parameter, if present.
    public subscript(id: UInt64) -> UInt64? { parameters.first { $0.id == id }?.value }

    /// Whether the peer can hold a WebTransport session: HTTP datagrams, and a WebTransport
    /// version (either draft's setting).
    public var supportsWebTransport: Bool {
        let datagrams = self[Self.h3Datagram] == 1 || self[Self.h3DatagramDraft04] == 1
        let sessions = (self[Self.webTransportMaxSessions] ?? 0) > 0 || self[Self.webTransportEnabledDraft02] == 1
        return datagrams && sessions
    }

    /// Whether extended CONNECT (RFC 9220) is allowed by the peer.
    public var allowsExtendedConnect: Bool { self[Self.enableConnectProtocol] == 1 }

    init(decoding payload: [UInt8]) throws(HTTP3Error) {
        var parameters: [(id: UInt64, value: UInt64)] = []
        var seen = Set<UInt64>()
        var cursor = 0
        while cursor < payload.count {
            guard let id = decodeVarInt(payload, &cursor), let value = decodeVarInt(payload, &cursor) else {
                throw HTTP3Error(HTTP3Error.frameError, "truncated SETTINGS")
            }
            // HTTP/2's settings may not appear (RFC 9114 §7.2.4.1), nor any twice.
            if [0x00, 0x02, 0x03, 0x04, 0x05].contains(id) {
                throw HTTP3Error(HTTP3Error.settingsError, "HTTP/2 setting 0x\(String(id, radix: 16))")
            }
            guard seen.insert(id).inserted else {
                throw HTTP3Error(HTTP3Error.settingsError, "setting 0x\(String(id, radix: 16)) twice")
            }
            if parameters.count < Self.maxParameters { parameters.append((id, value)) }
        }
        self.parameters = parameters
    }

    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        for p in parameters {
            VarInt.encode(p.id, into: &out)
            VarInt.encode(p.value, into: &out)
        }
        return out
    }
}
