// SPDX-License-Identifier: MIT

/// Every size limit the codec enforces, in one place. Sizes declared by the peer
/// are checked against these *before* anything is buffered or allocated.
public enum WireLimits {
    /// Largest control message body (SETUP, ANNOUNCE…, SUBSCRIBE…, TRACK…, FETCH…).
    /// The Rust peer allows 64 MiB; real control messages are a few hundred bytes,
    /// so 64 KiB bounds what a hostile peer can make us buffer per stream.
    public static let maxControlMessage = 64 * 1024
    /// Largest string field (paths, track names, the SETUP Path with its query and token).
    public static let maxString = 16 * 1024
    /// Largest single frame payload (the Rust group cache refuses frames over 32 MB).
    public static let maxFrame = 32 * 1024 * 1024
    /// Most SETUP parameters accepted (as the Rust peer).
    public static let maxSetupParameters = 64
    /// Longest hop chain in an announcement (as the Rust peer).
    public static let maxHops = 32
    /// Largest QUIC DATAGRAM payload we accept.
    public static let maxDatagram = 65_535
}
