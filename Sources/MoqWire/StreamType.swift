// SPDX-License-Identifier: MIT

/// The first varint on a unidirectional stream.
public enum UniStreamType: UInt64, Sendable {
    /// One group of one subscription (publisher → subscriber).
    case group = 0x0
    /// The SETUP message, exactly once per side.
    case setup = 0x1
}

/// The first varint on a bidirectional stream (opened by the requesting side).
public enum BidiStreamType: UInt64, Sendable {
    /// lite-01/02 session stream; refused on lite-06.
    case session = 0x0
    /// ANNOUNCE_REQUEST, then announcements, long-lived.
    case announce = 0x1
    /// One subscription.
    case subscribe = 0x2
    /// One group by sequence (HTTP-like).
    case fetch = 0x3
    /// Bandwidth/RTT reports.
    case probe = 0x4
    /// GOAWAY.
    case goaway = 0x5
    /// One TRACK / TRACK_INFO exchange.
    case track = 0x6
}

/// The ALPN tokens this implementation speaks over raw QUIC.
public enum MoqVersion: String, Sendable, CaseIterable {
    /// moq-lite-06, the version preferred by every moq-ffi 0.4.18 peer.
    case lite06 = "moq-lite-06"

    /// The ALPN list offered by clients and preferred by servers.
    public static let alpn = [MoqVersion.lite06.rawValue]
}
