// SPDX-License-Identifier: MIT
public import MoqBase
import MoqWire

/// QMux's transport parameters (draft-ietf-quic-qmux, as moq-dev's qmux 0.5 sends them): each side
/// sends them in its first frame; credit to open streams and send data starts at zero until the
/// peer's arrive. Encoded `id(i) length(i) value`, a parameter of value 0 left out (as Rust does).
public struct QMuxTransportParameters: Sendable, Equatable {
    /// Closes the session after this long without receiving (ms; 0: none). Rust: 30 000.
    public var maxIdleTimeoutMs: UInt64 = 0
    /// Connection-wide send credit granted to the peer (bytes). Rust: 1 MiB.
    public var initialMaxData: UInt64 = 0
    /// Per-stream credit for bidirectional streams we open (bytes). Rust: 256 KiB.
    public var initialMaxStreamDataBidiLocal: UInt64 = 0
    /// Per-stream credit for bidirectional streams the peer opens (bytes). Rust: 256 KiB.
    public var initialMaxStreamDataBidiRemote: UInt64 = 0
    /// Per-stream credit for unidirectional streams the peer opens (bytes). Rust: 256 KiB.
    public var initialMaxStreamDataUni: UInt64 = 0
    /// Bidirectional streams the peer may open. Rust: 100.
    public var initialMaxStreamsBidi: UInt64 = 0
    /// Unidirectional streams the peer may open. Rust: 100.
    public var initialMaxStreamsUni: UInt64 = 0
    /// Largest DATAGRAM frame accepted (0: datagrams off; moq-lite sends none over qmux).
    public var maxDatagramFrameSize: UInt64 = 0
    /// Largest record (WebSocket message) accepted; absent means the default 16 382, less is an error.
    public var maxRecordSize: UInt64 = Self.defaultMaxRecordSize
    /// RESET_STREAM_AT accepted (qmux-02; an empty value).
    public var resetStreamAt = false

    /// The record size every peer must accept.
    public static let defaultMaxRecordSize: UInt64 = 16_382

    public init() {}

    /// Parameter ids.
    enum ID {
        static let maxIdleTimeout: UInt64 = 0x01
        static let initialMaxData: UInt64 = 0x04
        static let initialMaxStreamDataBidiLocal: UInt64 = 0x05
        static let initialMaxStreamDataBidiRemote: UInt64 = 0x06
        static let initialMaxStreamDataUni: UInt64 = 0x07
        static let initialMaxStreamsBidi: UInt64 = 0x08
        static let initialMaxStreamsUni: UInt64 = 0x09
        static let resetStreamAt: UInt64 = 0x1d
        static let maxDatagramFrameSize: UInt64 = 0x20
        static let maxRecordSize: UInt64 = 0x0571_c594_29cd_0845
        /// QUIC v1 parameters that have no meaning without QUIC's handshake (a peer sending one is refused).
        static func isForbidden(_ id: UInt64) -> Bool {
            id == 0x00 || id == 0x02 || id == 0x03 || (0x0a...0x10).contains(id)
        }
    }

    /// Most parameters in one frame (a peer sending more is refused).
    static let maxCount = 64

    /// Decodes a parameter blob. Unknown ids are skipped; a forbidden id, a duplicate, a value that
    /// does not fill its length, or a record size below 16 382 is an error.
    public init(decoding blob: Bytes) throws(QMuxError) {
        var r = WireReader(blob)
        var seen = Set<UInt64>()
        do {
            while !r.isAtEnd {
                let id = try r.readVarInt()
                let value = try r.readLengthPrefixedBytes(limit: blob.count)
                guard seen.insert(id).inserted else {
                    throw QMuxError.transportParameter("parameter 0x\(String(id, radix: 16)) twice")
                }
                guard seen.count <= Self.maxCount else {
                    throw QMuxError.transportParameter("more than \(Self.maxCount) parameters")
                }
                guard !ID.isForbidden(id) else {
                    throw QMuxError.transportParameter("QUIC-only parameter 0x\(String(id, radix: 16))")
                }
                func integer() throws(QMuxError) -> UInt64 {
                    var v = WireReader(value)
                    do {
                        let n = try v.readVarInt()
                        try v.expectEnd()
                        return n
                    } catch { throw .transportParameter("parameter 0x\(String(id, radix: 16)): \(error)") }
                }
                switch id {
                case ID.maxIdleTimeout: maxIdleTimeoutMs = try integer()
                case ID.initialMaxData: initialMaxData = try integer()
                case ID.initialMaxStreamDataBidiLocal: initialMaxStreamDataBidiLocal = try integer()
                case ID.initialMaxStreamDataBidiRemote: initialMaxStreamDataBidiRemote = try integer()
                case ID.initialMaxStreamDataUni: initialMaxStreamDataUni = try integer()
                case ID.initialMaxStreamsBidi: initialMaxStreamsBidi = try integer()
                case ID.initialMaxStreamsUni: initialMaxStreamsUni = try integer()
                case ID.maxDatagramFrameSize: maxDatagramFrameSize = try integer()
                case ID.maxRecordSize:
                    maxRecordSize = try integer()
                    guard maxRecordSize >= Self.defaultMaxRecordSize else {
                        throw QMuxError.transportParameter("max_record_size \(maxRecordSize) is below 16382")
                    }
                case ID.resetStreamAt:
                    guard value.isEmpty else { throw QMuxError.transportParameter("reset_stream_at carries a value") }
                    resetStreamAt = true
                default: continue
                }
            }
        } catch let error as QMuxError {
            throw error
        } catch {
            throw .transportParameter("\(error)")
        }
    }

    /// The parameter blob, in Rust's order, zeros left out.
    public func encoded() -> [UInt8] {
        var w = WireWriter()
        func put(_ id: UInt64, _ value: UInt64) {
            guard value != 0 else { return }
            w.writeVarInt(id)
            w.writeVarInt(UInt64(VarInt.size(of: value)))
            w.writeVarInt(value)
        }
        put(ID.maxIdleTimeout, maxIdleTimeoutMs)
        put(ID.initialMaxData, initialMaxData)
        put(ID.initialMaxStreamDataBidiLocal, initialMaxStreamDataBidiLocal)
        put(ID.initialMaxStreamDataBidiRemote, initialMaxStreamDataBidiRemote)
        put(ID.initialMaxStreamDataUni, initialMaxStreamDataUni)
        put(ID.initialMaxStreamsBidi, initialMaxStreamsBidi)
        put(ID.initialMaxStreamsUni, initialMaxStreamsUni)
        put(ID.maxDatagramFrameSize, maxDatagramFrameSize)
        put(ID.maxRecordSize, maxRecordSize)
        if resetStreamAt {
            w.writeVarInt(ID.resetStreamAt)
            w.writeVarInt(0)
        }
        return w.bytes
    }
}
