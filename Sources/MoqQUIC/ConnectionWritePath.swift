// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc
internal import MoqBase

/// The write path: stream data by send order, datagrams, and segmentation-offload batches to the socket.
extension QUICConnection {

    /// Writes whatever ngtcp2 allows now: pending close, stream data by send order, datagrams.
    func flush() {
        guard isOpen, let conn else { return }
        if let close = pendingClose {
            pendingClose = nil
            var ccerr = ngtcp2_ccerr()
            switch close {
            case .tlsAlert(let alert, let reason):
                ngtcp2_ccerr_set_tls_alert(&ccerr, alert, nil, 0)
                startClosing(ccerr, reason: reason)
            case .application(let code, let reason):
                ngtcp2_ccerr_default(&ccerr)
                let reasonBytes = Array(reason.utf8.prefix(1024))
                reasonBytes.withUnsafeBufferPointer { r in
                    ngtcp2_ccerr_set_application_error(&ccerr, code, r.baseAddress, r.count)
                    startClosing(ccerr, reason: .application(code: code, reason: reason, byPeer: false))
                }
            }
            return
        }
        guard let socket else { return }
        if socket.isWriteBlocked {
            socket.waitForWritable(self)
            return
        }
        while let pending = pendingPackets.first {
            let outcome = pending.bytes.withUnsafeBytes { sendRaw($0, to: pending.to, segment: pending.segment) }
            switch outcome {
            case .wouldBlock:
                socket.waitForWritable(self)
                return
            case .failed(let e):
                terminate(.unreachable("sendto \(remote): \(Sys.errnoText(e))"))
                return
            case .sent:
                pendingPackets.removeFirst()
            }
        }
        writePackets(conn, socket)
        if let threshold = drainThreshold, unsent.bytes < threshold, isOpen {
            drainThreshold = nil
            delegate?.quicConnection(self, unsentBytesBelow: threshold)
        }
    }

    private func writePackets(_ conn: OpaquePointer, _ socket: UDPSocket) {
        let ts = Sys.now()
        let maxPacket = Int(ngtcp2_conn_get_path_max_tx_udp_payload_size(conn))
        let budget = max(Int(ngtcp2_conn_get_send_quantum(conn)), maxPacket)
        var written = 0
        let base = txBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        // Each packet is written after the batch in progress (see `emit`).
        var dest: UnsafeMutablePointer<UInt8> { base + batchBytes }
        let destLength = maxPacket
        let batchLimit = min(txBuffer.count, UDPSocket.maxSegmentedBytes)
        let path = pathPointer
        defer { if isOpen { flushBatch() } }

        // Streams with something to send, highest order first, FIFO among equals.
        var candidates = txCandidates
        txCandidates = []
        candidates.removeAll(keepingCapacity: true)
        for id in sendable { if let s = streams[id], s.wantsToSend { candidates.append(s) } }
        if candidates.count > 1 {
            candidates.sort { $0.order != $1.order ? $0.order > $1.order : $0.sequence < $1.sequence }
        }
        defer {
            candidates.removeAll(keepingCapacity: true)
            txCandidates = candidates
        }
        var ci = 0
        let vecs = txVecs
        var datagramTried = false

        while written < budget {
            if batchLimit - batchBytes < maxPacket && !flushBatch() { return }
            // Datagrams first: they carry the most latency-sensitive data and cannot be retransmitted.
            if datagramHead < datagrams.count && !datagramTried {
                let dg = datagrams[datagramHead]
                var accepted: Int32 = 0
                let n = dg.withUnsafeBytes { raw -> Int in
                    var v = ngtcp2_vec(
                        base: UnsafeMutablePointer(mutating: raw.baseAddress?.assumingMemoryBound(to: UInt8.self)),
                        len: raw.count)
                    return Int(
                        moq_ngtcp2_conn_writev_datagram(
                            conn, path, dest, destLength, &accepted, UInt32(NGTCP2_WRITE_DATAGRAM_FLAG_MORE), 0, &v, 1,
                            ts))
                }
                if accepted != 0 || n == Int(NGTCP2_ERR_INVALID_ARGUMENT) || n == Int(NGTCP2_ERR_INVALID_STATE) {
                    datagrams[datagramHead] = Bytes()
                    datagramHead += 1
                    if datagramHead == datagrams.count {
                        datagrams.removeAll(keepingCapacity: true)
                        datagramHead = 0
                    }
                } else {
                    datagramTried = true  // does not fit this packet: let streams fill it, retry in the next one
                }
                if n == Int(NGTCP2_ERR_WRITE_MORE) || n == Int(NGTCP2_ERR_INVALID_ARGUMENT)
                    || n == Int(NGTCP2_ERR_INVALID_STATE)
                {
                    continue
                }
                if n < 0 {
                    failWrite(Int32(n))
                    return
                }
                if n == 0 { break }
                datagramTried = false
                if !emit(n, path: path, ts: ts) { return }
                written += n
                continue
            }

            while ci < candidates.count && !candidates[ci].wantsToSend { ci += 1 }
            let stream = ci < candidates.count ? candidates[ci] : nil
            var count = 0
            var fin = false
            var total = 0
            if let stream {
                let g = stream.gather(into: vecs)
                count = g.count
                total = g.bytes
                fin = stream.finQueued && g.reachesEnd && !stream.finSent
            }
            var flags = UInt32(NGTCP2_WRITE_STREAM_FLAG_MORE)
            if fin { flags |= UInt32(NGTCP2_WRITE_STREAM_FLAG_FIN) }
            var ndatalen: ngtcp2_ssize = -1
            let n = Int(
                moq_ngtcp2_conn_writev_stream(
                    conn, path, dest, destLength, &ndatalen, flags, stream?.id ?? -1,
                    count > 0 ? UnsafePointer(vecs.baseAddress) : nil, count, ts))
            if let stream, ndatalen >= 0 {
                stream.didSend(Int(ndatalen), fin: fin && Int(ndatalen) == total)
                if !stream.wantsToSend { sendable.remove(stream.id) }
            }
            if n < 0 {
                switch Int32(n) {
                case NGTCP2_ERR_WRITE_MORE:
                    // Packet has room: if this stream still has data it is flow-limited for now; move on.
                    if let stream, stream.wantsToSend { ci += 1 }
                    continue
                case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                    stream?.blocked = true
                    ci += 1
                    continue
                case NGTCP2_ERR_STREAM_SHUT_WR, NGTCP2_ERR_STREAM_NOT_FOUND:
                    if let stream {
                        stream.dropSendBuffer()
                        sendable.remove(stream.id)
                    }
                    ci += 1
                    continue
                default:
                    failWrite(Int32(n))
                    return
                }
            }
            if n == 0 { break }
            if !emit(n, path: path, ts: ts) { return }
            written += n
            // A stream that was handed data but still has more keeps its place (highest order first).
        }
        ngtcp2_conn_update_pkt_tx_time(conn, ts)
    }

    /// Adds the `n`-byte packet ngtcp2 just wrote after the batch in progress, and sends the batch
    /// when it is complete: a shorter packet ends it (all but the last segment have one size), as
    /// do the kernel's segment limit and a longer packet (which starts the next batch). Returns
    /// false if the connection must stop writing.
    private func emit(_ n: Int, path: UnsafeMutablePointer<ngtcp2_path>, ts: UInt64) -> Bool {
        counters.packetsSent += 1
        counters.bytesSent += UInt64(n)
        sendRate.record(bytes: n, now: ts)
        if !isClient && pathChanged(path) {
            // Migration or NAT rebinding: what is batched goes to the old address, then follow the path.
            if !flushBatch(keeping: n) { return false }
            followPath(path)
        }
        if settings.testLoss.tx > 0 && nextRandom() < settings.testLoss.tx {
            counters.packetsDroppedByTestLoss += 1
            return true
        }
        if batchCount > 0 && n > batchSegment {
            if !flushBatch(keeping: n) { return false }
        }
        if batchCount == 0 { batchSegment = n }
        batchBytes += n
        batchCount += 1
        if n < batchSegment || batchCount == UDPSocket.maxSegments || !socketBatches { return flushBatch() }
        return true
    }

    /// Whether the socket takes segmented batches (else each packet is sent as it is written).
    private var socketBatches: Bool { socket?.segmentationOffload ?? false }

    /// Sends the batch. With `keeping` > 0, the packet of that size written after the batch then
    /// moves to the start of the buffer (it begins the next batch). Returns false if the
    /// connection must stop writing (socket full: what was not sent waits in `pendingPackets`).
    @discardableResult
    private func flushBatch(keeping next: Int = 0) -> Bool {
        guard batchCount > 0 else { return true }
        let bytes = UnsafeRawBufferPointer(rebasing: txBuffer[0..<batchBytes])
        let segment = batchCount > 1 ? batchSegment : 0
        let to: SocketAddress? = isClient ? nil : remote
        let nextStart = batchBytes
        batchBytes = 0
        batchCount = 0
        counters.sendCalls += 1
        switch sendRaw(bytes, to: to, segment: segment) {
        case .sent:
            if next > 0 { memmove(txBuffer.baseAddress!, txBuffer.baseAddress! + nextStart, next) }
            return true
        case .wouldBlock:
            pendingPackets.append((Array(bytes), segment, to))
            if next > 0 {
                let packet = UnsafeRawBufferPointer(rebasing: txBuffer[nextStart..<nextStart + next])
                pendingPackets.append((Array(packet), 0, to))
            }
            if let conn { ngtcp2_conn_update_pkt_tx_time(conn, Sys.now()) }
            socket?.waitForWritable(self)
            return false
        case .failed(let e):
            terminate(.unreachable("sendto \(remote): \(Sys.errnoText(e))"))
            return false
        }
    }

    /// A write error: what is batched is dropped (the connection is ending) before the close is written.
    private func failWrite(_ rc: Int32) {
        batchBytes = 0
        batchCount = 0
        handleError(rc)
    }

    private func pathChanged(_ path: UnsafeMutablePointer<ngtcp2_path>) -> Bool {
        let r = path.pointee.remote
        guard let addr = r.addr, r.addrlen > 0 else { return false }
        return !remote.equals(UnsafeRawPointer(addr).assumingMemoryBound(to: sockaddr_storage.self), r.addrlen)
    }

    /// Makes `remote` the peer address of `path` when ngtcp2 moved to another path.
    func followPath(_ path: UnsafeMutablePointer<ngtcp2_path>) {
        let r = path.pointee.remote
        if pathChanged(path), let addr = r.addr {
            // Migration or NAT rebinding.
            memcpy(remote.storage, addr, Int(r.addrlen))
            remote.length = r.addrlen
        }
    }

    /// Server sockets are shared: packets carry the destination. Client sockets are connected.
    private func sendRaw(_ packet: UnsafeRawBufferPointer, to: SocketAddress?, segment: Int = 0) -> SendOutcome {
        guard let socket else { return .failed(EBADF) }
        if let to {
            return socket.send(packet, to: UnsafePointer(to.sockaddr), length: to.length, segment: segment)
        }
        return socket.send(packet, to: nil, length: 0, segment: segment)
    }

    /// Best-effort send used for CONNECTION_CLOSE packets.
    func transmit(_ packet: UnsafeRawBufferPointer, to: SocketAddress?) {
        counters.packetsSent += 1
        counters.bytesSent += UInt64(packet.count)
        _ = sendRaw(packet, to: isClient ? nil : remote)
    }
}
