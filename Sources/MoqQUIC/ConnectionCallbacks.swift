// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc
internal import MoqBase

/// What ngtcp2 calls back into, inside `read`, `expiry` and `write` (loop thread).
extension QUICConnection {

    func nextSequence() -> UInt64 {
        streamSequence += 1
        return streamSequence
    }

    func onHandshakeCompleted() -> Int32 {
        phase = .established
        negotiatedALPN = tls?.selectedALPN
        if isClient { peerCertificateFingerprint = tls?.peerFingerprint }
        guard let alpn = negotiatedALPN, settings.alpn.contains(alpn) else {
            // Cannot write from inside a callback: flush() closes right after this packet.
            pendingClose = .tlsAlert(120, reason: .alpn("the peer selected no protocol from \(settings.alpn)"))
            loop.markDirty(self)
            return 0
        }
        delegate?.quicConnectionDidConnect(self)
        return 0
    }

    func onStreamOpen(_ id: Int64) {
        streams[id] = StreamState(id: id, peerInitiated: true, sequence: nextSequence(), total: unsent)
        delegate?.quicConnection(self, didOpenStream: id)
    }

    func onStreamData(_ id: Int64, _ data: UnsafeRawBufferPointer, fin: Bool) {
        streams[id]?.delivered = true
        delegate?.quicConnection(self, didReceive: data, on: id, fin: fin)
        // The application has consumed the bytes: return the credit (unless it returns it itself).
        if settings.automaticFlowControlCredit, let conn, !data.isEmpty {
            _ = ngtcp2_conn_extend_max_stream_offset(conn, id, UInt64(data.count))
            ngtcp2_conn_extend_max_offset(conn, UInt64(data.count))
        }
    }

    func onStreamReset(_ id: Int64, code: UInt64) {
        let state = streams[id]
        delegate?.quicConnection(self, didResetStream: id, code: code)
        // ngtcp2 1.11 bug (fixed upstream in 1.23, commit b2745ac7): a peer-opened *unidirectional* stream that is
        // reset before any data arrived never reaches stream_close, so its MAX_STREAMS credit would be lost for
        // good. Return the credit here, remember it so stream_close (if a fixed ngtcp2 calls it) does not return it
        // twice, and retire the stream on our side. ngtcp2 keeps its own ~250 B record until the connection ends.
        if let conn, let state, state.peerInitiated, !state.delivered, !isBidirectional(id) {
            ngtcp2_conn_extend_max_streams_uni(conn, 1)
            resetCreditReturned.insert(id)
            streams.removeValue(forKey: id)
            sendable.remove(id)
            delegate?.quicConnection(self, didCloseStream: id)
        }
    }

    func onStreamClose(_ id: Int64) {
        if resetCreditReturned.remove(id) != nil { return }  // already retired by the 1.11 workaround
        guard let state = streams.removeValue(forKey: id) else { return }
        // What it still held (a stream the peer stopped while it waited for credit) leaves the unsent total.
        state.dropSendBuffer()
        sendable.remove(id)
        if let conn {
            lostOnClosedStreams += UInt64(ngtcp2_conn_get_stream_loss_count(conn, id))
            if state.peerInitiated {
                if isBidirectional(id) {
                    ngtcp2_conn_extend_max_streams_bidi(conn, 1)
                } else {
                    ngtcp2_conn_extend_max_streams_uni(conn, 1)
                }
            }
        }
        delegate?.quicConnection(self, didCloseStream: id)
    }

    func onStreamCredit(bidirectional: Bool) {
        guard phase == .established else { return }
        delegate?.quicConnection(self, streamCreditAvailable: bidirectional)
    }

    func onStreamDataCredit(_ id: Int64) {
        guard let s = streams[id], s.blocked else { return }
        s.blocked = false
        if s.wantsToSend {
            sendable.insert(id)
            loop.markDirty(self)
        }
    }

    func onDatagram(_ data: UnsafeRawBufferPointer) {
        delegate?.quicConnection(self, didReceiveDatagram: data)
    }

    func isBidirectional(_ id: Int64) -> Bool { id & 0x2 == 0 }

    /// Uniform in [0, 1), splitmix64 (test loss only).
    func nextRandom() -> Double {
        rng &+= 0x9e37_79b9_7f4a_7c15
        var z = rng
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
