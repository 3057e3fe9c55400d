// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc
internal import MoqBase

/// Setup, called by QUICClient and QUICServer: the ngtcp2 connection, TLS, transport parameters.
extension QUICConnection {

    var isOpen: Bool { phase == .handshaking || phase == .established }

    func makeCallbacks() -> ngtcp2_callbacks {
        var cb = ngtcp2_callbacks()
        if isClient {
            cb.client_initial = ngtcp2_crypto_client_initial_cb
            cb.recv_retry = ngtcp2_crypto_recv_retry_cb
        } else {
            cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb
        }
        cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb
        cb.encrypt = ngtcp2_crypto_encrypt_cb
        cb.decrypt = ngtcp2_crypto_decrypt_cb
        cb.hp_mask = ngtcp2_crypto_hp_mask_cb
        cb.update_key = ngtcp2_crypto_update_key_cb
        cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb
        cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb
        cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb
        cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb
        cb.rand = { dest, len, _ in
            if let dest { Sys.random(UnsafeMutableRawBufferPointer(start: dest, count: len)) }
        }
        cb.get_new_connection_id = { _, cid, token, len, ud in
            guard let cid, let token else { return NGTCP2_ERR_CALLBACK_FAILURE }
            cid.pointee.datalen = len
            let shard = QUICConnection.from(ud).shard
            withUnsafeMutableBytes(of: &cid.pointee.data) {
                Sys.random(UnsafeMutableRawBufferPointer(rebasing: $0[0..<len]))
                // A sharded server's loop is found by the ID's first byte.
                if len > 0 { $0[0] = shard.firstByte($0[0]) }
            }
            Sys.random(UnsafeMutableRawBufferPointer(start: token, count: Int(NGTCP2_STATELESS_RESET_TOKENLEN)))
            QUICConnection.from(ud).server?.associate(CIDKey(cid.pointee), with: QUICConnection.from(ud))
            return 0
        }
        cb.remove_connection_id = { _, cid, ud in
            if let cid { QUICConnection.from(ud).server?.dissociate(CIDKey(cid.pointee)) }
            return 0
        }
        cb.handshake_completed = { _, ud in
            QUICConnection.from(ud).onHandshakeCompleted()
        }
        cb.stream_open = { _, id, ud in
            QUICConnection.from(ud).onStreamOpen(id)
            return 0
        }
        cb.recv_stream_data = { _, flags, id, _, data, len, ud, _ in
            QUICConnection.from(ud).onStreamData(
                id, UnsafeRawBufferPointer(start: data, count: len),
                fin: flags & UInt32(NGTCP2_STREAM_DATA_FLAG_FIN) != 0)
            return 0
        }
        cb.acked_stream_data_offset = { _, id, offset, len, ud, _ in
            QUICConnection.from(ud).streams[id]?.acknowledge(upTo: offset + len)
            return 0
        }
        cb.stream_close = { _, _, id, _, ud, _ in
            QUICConnection.from(ud).onStreamClose(id)
            return 0
        }
        cb.stream_reset = { _, id, _, code, ud, _ in
            QUICConnection.from(ud).onStreamReset(id, code: code)
            return 0
        }
        // ngtcp2 1.11's `stream_stop_sending` reports that *we* stopped reading (it fires while the
        // STOP_SENDING frame is being written), not the peer's STOP_SENDING: taking it for the
        // peer's dropped our own unsent bytes while ngtcp2 still held pointers to them, and freed
        // heap memory went out as stream data (a stream written, finished and stopped in one turn).
        // It is not set; a peer's STOP_SENDING shows as the write side shut (ConnectionWritePath).
        cb.extend_max_local_streams_bidi = { _, _, ud in
            QUICConnection.from(ud).onStreamCredit(bidirectional: true)
            return 0
        }
        cb.extend_max_local_streams_uni = { _, _, ud in
            QUICConnection.from(ud).onStreamCredit(bidirectional: false)
            return 0
        }
        cb.extend_max_stream_data = { _, id, _, ud, _ in
            QUICConnection.from(ud).onStreamDataCredit(id)
            return 0
        }
        cb.recv_datagram = { _, _, data, len, ud in
            QUICConnection.from(ud).onDatagram(UnsafeRawBufferPointer(start: data, count: len))
            return 0
        }
        return cb
    }

    static func from(_ ud: UnsafeMutableRawPointer?) -> QUICConnection {
        Unmanaged<QUICConnection>.fromOpaque(ud!).takeUnretainedValue()
    }

    /// ngtcp2 settings common to both sides.
    func makeSettings() -> ngtcp2_settings {
        var s = ngtcp2_settings()
        moq_ngtcp2_settings_default(&s)
        s.initial_ts = Sys.now()
        s.handshake_timeout = settings.handshakeTimeout.nanoseconds
        // The connection window never grows past maxData (the memory bound the user chose); ngtcp2 may
        // auto-tune a stream's window from maxStreamData up to min(maxData, 16 MiB) when the RTT calls for it.
        s.max_window = settings.maxData
        s.max_stream_window = max(settings.maxStreamData, min(settings.maxData, 16 << 20))
        switch settings.congestionControl {
        case .bbr: s.cc_algo = NGTCP2_CC_ALGO_BBR
        case .cubic: s.cc_algo = NGTCP2_CC_ALGO_CUBIC
        case .reno: s.cc_algo = NGTCP2_CC_ALGO_RENO
        }
        return s
    }

    /// Transport parameters common to both sides.
    func makeTransportParams() -> ngtcp2_transport_params {
        var p = ngtcp2_transport_params()
        moq_ngtcp2_transport_params_default(&p)
        p.initial_max_stream_data_bidi_local = settings.maxStreamData
        p.initial_max_stream_data_bidi_remote = settings.maxStreamData
        p.initial_max_stream_data_uni = settings.maxStreamData
        p.initial_max_data = settings.maxData
        p.initial_max_streams_bidi = settings.maxBidiStreams
        p.initial_max_streams_uni = settings.maxUniStreams
        p.max_idle_timeout = settings.idleTimeout.nanoseconds
        p.max_datagram_frame_size = settings.maxDatagramFrameSize
        p.active_connection_id_limit = 7
        return p
    }

    /// Finishes setup once `conn` and `tls` exist: registers with the loop and starts the handshake.
    func activate() {
        guard let conn, let tls else { return }
        ngtcp2_conn_set_tls_native_handle(conn, UnsafeMutableRawPointer(tls.session))
        ngtcp2_conn_set_keep_alive_timeout(conn, settings.keepAliveInterval.nanoseconds)
        phase = .handshaking
        loop.add(self)
        loop.markDirty(self)
    }

    /// The `ngtcp2_path` inside the heap-allocated path storage (stable address; ngtcp2 fills it on writes).
    var pathPointer: UnsafeMutablePointer<ngtcp2_path> {
        (UnsafeMutableRawPointer(pathStorage) + MemoryLayout<ngtcp2_path_storage>.offset(of: \.path)!)
            .assumingMemoryBound(to: ngtcp2_path.self)
    }

    /// A path whose local side is the socket's address and remote side `from`; valid for the call only.
    func withPath<R>(from: SocketAddress, _ body: (UnsafePointer<ngtcp2_path>) -> R) -> R {
        let local = socket!.local
        var path = ngtcp2_path(
            local: ngtcp2_addr(addr: local.sockaddr, addrlen: local.length),
            remote: ngtcp2_addr(addr: from.sockaddr, addrlen: from.length), user_data: nil)
        return body(&path)
    }
}
