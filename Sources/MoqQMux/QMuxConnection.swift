// SPDX-License-Identifier: MIT
public import MoqBase

/// One qmux connection without I/O: QUIC's streams, credit and close over a reliable, ordered
/// carrier (a WebSocket, one record per binary message). The layer below feeds it the peer's
/// records (``receive(record:now:)``) and sends what ``nextRecord(now:)`` returns while its socket
/// takes more; the layer above calls the stream operations and reads ``takeEvents()``.
///
/// Every peer-fed quantity is bounded: received bytes by the windows advertised (connection and
/// stream), streams by the stream limits, records by ``maxRecordSize``; pending control frames are
/// coalesced (one MAX_STREAM_DATA per stream, the newest QX_PING answer). Stream data must arrive
/// in order, as an ordered carrier delivers it; a gap, an overlap or a frame that breaks a rule
/// closes the connection with CONNECTION_CLOSE and the QUIC transport code.
public final class QMuxConnection {
    /// True for the side that opened the carrier.
    public let isClient: Bool
    public let settings: QMuxSettings
    /// The largest record accepted from the peer (what we leave ``QMuxTransportParameters/maxRecordSize`` at).
    public static let maxRecordSize = Int(QMuxTransportParameters.defaultMaxRecordSize)
    /// The peer's transport parameters, once received.
    public private(set) var peerParameters: QMuxTransportParameters?
    /// Set when the connection ended (see ``QMuxEvent/closed(_:)``).
    public private(set) var closeReason: QMuxCloseReason?
    /// True once the close record (if any) was handed out: the carrier can be shut.
    public private(set) var isFinished = false
    /// Smoothed round trip measured with QX_PING, in nanoseconds (0: none yet).
    public private(set) var smoothedRTT: UInt64 = 0

    var streams: [Int64: QMuxStream] = [:]
    private var events: [QMuxEvent] = []

    // Streams we open: the next index and the peer's limit, per kind (0: bidirectional, 1: unidirectional).
    private var nextLocalIndex: [UInt64] = [0, 0]
    private var localStreamLimit: [UInt64] = [0, 0]
    // Streams the peer opens: the next index, our limit, how many closed.
    private var nextPeerIndex: [UInt64] = [0, 0]
    private var peerStreamLimit: [UInt64]
    /// The limits the peer has been told (enforced): ``peerStreamLimit`` rises first, this when its
    /// MAX_STREAMS goes out, so a peer that does not read cannot open streams faster than we answer.
    private var peerStreamLimitSent: [UInt64]
    private var peerStreamsClosed: [UInt64] = [0, 0]

    // Connection credit.
    private var sendLimit: UInt64 = 0
    private var sentTotal: UInt64 = 0
    private var receiveLimit: UInt64
    private var receivedTotal: UInt64 = 0
    private var consumedTotal: UInt64 = 0

    // Control frames due, coalesced.
    private var parametersSent = false
    private var maxDataDue = false
    private var maxStreamDataDue: Set<Int64> = []
    private var maxStreamsDue: [Bool] = [false, false]
    private var resetsDue: [QMuxFrame] = []
    private var pingAnswerDue: UInt64?
    private var closeDue: QMuxFrame?
    /// Streams with bytes or a FIN waiting.
    private var sendPending: Set<Int64> = []
    private var unsentTotal = 0
    private var drainThreshold: Int?

    // Liveness.
    private var lastReceive: UInt64
    private var lastPing: UInt64
    private var pingSequence: UInt64 = 0
    private var pingInFlight: (sequence: UInt64, sentAt: UInt64)?

    public init(isClient: Bool, settings: QMuxSettings = QMuxSettings(), now: UInt64) {
        self.isClient = isClient
        self.settings = settings
        peerStreamLimit = [min(settings.maxStreamsBidi, 1 << 60), min(settings.maxStreamsUni, 1 << 60)]
        peerStreamLimitSent = peerStreamLimit
        receiveLimit = settings.maxData
        lastReceive = now
        lastPing = now
    }

    /// Our transport parameters, sent first.
    public var localParameters: QMuxTransportParameters {
        var p = QMuxTransportParameters()
        p.maxIdleTimeoutMs = settings.idleTimeoutMs
        p.initialMaxData = settings.maxData
        p.initialMaxStreamDataBidiLocal = settings.maxStreamData
        p.initialMaxStreamDataBidiRemote = settings.maxStreamData
        p.initialMaxStreamDataUni = settings.maxStreamData
        p.initialMaxStreamsBidi = peerStreamLimit[0]
        p.initialMaxStreamsUni = peerStreamLimit[1]
        // No datagrams (moq-lite sends none over qmux) and the default record size: both left out.
        return p
    }

    /// Events since the last call, oldest first.
    public func takeEvents() -> [QMuxEvent] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    var isOpen: Bool { closeReason == nil }

    // MARK: Streams (the session core's transport operations)

    /// Opens a stream, or nil while the peer's stream limit (or its parameters) is not there yet.
    public func openStream(bidirectional: Bool) -> Int64? {
        let kind = bidirectional ? 0 : 1
        guard isOpen, let peer = peerParameters, nextLocalIndex[kind] < localStreamLimit[kind] else { return nil }
        let id = QMuxStreamID.make(index: nextLocalIndex[kind], bidirectional: bidirectional, byClient: isClient)
        nextLocalIndex[kind] += 1
        let limit = bidirectional ? peer.initialMaxStreamDataBidiRemote : peer.initialMaxStreamDataUni
        streams[id] = QMuxStream(
            id: id, send: QMuxStream.Send(limit: limit),
            receive: bidirectional ? receiveHalf() : nil, announced: true)
        return id
    }

    func receiveHalf() -> QMuxStream.Receive {
        QMuxStream.Receive(limit: settings.maxStreamData, window: settings.maxStreamData)
    }

    /// Queues bytes on a stream; `fin` ends it after them. Ignored on a stream not open for sending.
    public func write(_ id: Int64, _ data: Bytes, fin: Bool) {
        guard isOpen, var send = streams[id]?.send, !send.done, !send.finQueued else { return }
        if !data.isEmpty {
            send.queue.append(data)
            send.queued += data.count
            unsentTotal += data.count
        }
        send.finQueued = fin
        streams[id]?.send = send
        if !data.isEmpty || fin { sendPending.insert(id) }
    }

    /// Ends the send side after the queued bytes.
    public func finish(_ id: Int64) { write(id, Bytes(), fin: true) }

    /// The layer above is done with `bytes` received on `id` (delivered in ``QMuxEvent/received(_:_:fin:)``,
    /// possibly after the stream closed): their credit returns to the peer (MAX_STREAM_DATA /
    /// MAX_DATA once half a window is used).
    public func consumed(_ id: Int64, bytes: Int) {
        guard isOpen, bytes > 0 else { return }
        returnConnectionCredit(UInt64(bytes))
        guard var receive = streams[id]?.receive else { return }
        receive.consumed = min(receive.received, receive.consumed + UInt64(bytes))
        if !receive.done, receive.limit - receive.consumed <= receive.window / 2 {
            receive.limit = receive.consumed + receive.window
            maxStreamDataDue.insert(id)
        }
        streams[id]?.receive = receive
    }

    /// Connection credit back for `n` bytes (never more than received).
    private func returnConnectionCredit(_ n: UInt64) {
        consumedTotal += min(n, receivedTotal - consumedTotal)
        if receiveLimit - consumedTotal <= settings.maxData / 2 {
            receiveLimit = consumedTotal + settings.maxData
            maxDataDue = true
        }
    }

    /// RESET_STREAM with a raw code: queued bytes are dropped, the send side is done.
    public func resetStream(_ id: Int64, code: UInt64) {
        guard isOpen, var send = streams[id]?.send, !send.done else { return }
        unsentTotal -= send.queued
        send.queue = []
        send.queued = 0
        send.done = true
        streams[id]?.send = send
        sendPending.remove(id)
        resetsDue.append(.resetStream(id: UInt64(id), code: code, finalSize: send.offset))
        closeIfFinished(id)
    }

    /// STOP_SENDING with a raw code: what still arrives on the stream is dropped, its credit
    /// returned at once (bytes delivered before are returned by ``consumed(_:bytes:)`` as usual).
    public func stopSending(_ id: Int64, code: UInt64) {
        guard isOpen, var receive = streams[id]?.receive, !receive.done else { return }
        receive.done = true
        streams[id]?.receive = receive
        resetsDue.append(.stopSending(id: UInt64(id), code: code))
        closeIfFinished(id)
    }

    /// Higher send orders are transmitted first.
    public func setSendOrder(_ id: Int64, _ order: Int64) { streams[id]?.send?.order = order }

    /// Bytes written on `id` and not transmitted yet.
    public func unsentBytes(_ id: Int64) -> Int { streams[id]?.send?.queued ?? 0 }

    /// Bytes written on all streams and not transmitted yet.
    public var totalUnsentBytes: Int { unsentTotal }

    /// Asks for one ``QMuxEvent/unsentBelow`` as soon as fewer than `threshold` bytes remain unsent.
    public func notifyWhenUnsent(below threshold: Int) {
        drainThreshold = max(drainThreshold ?? 0, threshold)
        checkDrained()
    }

    private func checkDrained() {
        guard let threshold = drainThreshold, unsentTotal < threshold else { return }
        drainThreshold = nil
        events.append(.unsentBelow)
    }

    /// Closes with APPLICATION_CLOSE (a raw session code); the record goes out next.
    public func close(code: UInt64, reason: String) {
        guard isOpen else { return }
        end(
            .application(code: code, reason: reason, byPeer: false),
            sending: .applicationClose(code: code, reason: reason))
    }

    /// The carrier ended or failed.
    public func carrierLost(_ why: String) {
        guard isOpen else { return }
        end(.lost(why), sending: nil)
        isFinished = true
    }

    /// Closes with CONNECTION_CLOSE for a rule the peer broke.
    func fail(_ code: UInt64, _ reason: String) {
        guard isOpen else { return }
        end(
            .transport(code: code, reason: reason, byPeer: false),
            sending: .connectionClose(code: code, frameType: 0, reason: reason))
    }

    private func end(_ reason: QMuxCloseReason, sending frame: QMuxFrame?) {
        closeReason = reason
        closeDue = frame
        if frame == nil { isFinished = true }
        streams = [:]
        sendPending = []
        unsentTotal = 0
        events.append(.closed(reason))
    }

    /// Reports a stream closed and forgets it once both halves are done; a peer stream's
    /// closing returns stream credit (MAX_STREAMS once half the limit is used).
    func closeIfFinished(_ id: Int64) {
        guard let stream = streams[id], stream.isFinished else { return }
        streams[id] = nil
        sendPending.remove(id)
        maxStreamDataDue.remove(id)
        if stream.announced { events.append(.streamClosed(id)) }
        guard QMuxStreamID.isClientInitiated(id) != isClient else { return }
        let kind = QMuxStreamID.isBidirectional(id) ? 0 : 1
        peerStreamsClosed[kind] += 1
        let window = min(kind == 0 ? settings.maxStreamsBidi : settings.maxStreamsUni, 1 << 60)
        if peerStreamLimit[kind] - peerStreamsClosed[kind] <= window / 2,
            peerStreamsClosed[kind] + window <= 1 << 60
        {
            peerStreamLimit[kind] = peerStreamsClosed[kind] + window
            maxStreamsDue[kind] = true
        }
    }

    // MARK: Liveness

    /// When ``tick(now:)`` is due next (idle close or keep-alive), in the clock of `now`.
    public var nextDeadline: UInt64? {
        guard isOpen else { return nil }
        var deadline = lastReceive &+ idleTimeoutNs
        if settings.keepAliveMs > 0 { deadline = min(deadline, lastPing &+ keepAliveNs) }
        return deadline
    }

    /// The idle timeout in force: the smaller of both sides' (0 ignored).
    var idleTimeoutNs: UInt64 {
        let peer = peerParameters?.maxIdleTimeoutMs ?? 0
        let ms = [settings.idleTimeoutMs, peer].filter { $0 > 0 }.min() ?? UInt64.max / 1_000_000
        return min(ms, UInt64.max / 2_000_000) * 1_000_000
    }

    var keepAliveNs: UInt64 { min(settings.keepAliveMs, UInt64.max / 2_000_000) * 1_000_000 }

    /// Closes an idle connection (silently, as QUIC does) and queues a QX_PING when due: one per
    /// keep-alive interval, busy or not (as moq-dev's qmux), which also measures the round trip.
    public func tick(now: UInt64) {
        guard isOpen else { return }
        if now >= lastReceive &+ idleTimeoutNs {
            end(.idleTimeout, sending: nil)
            return
        }
        if settings.keepAliveMs > 0, now >= lastPing &+ keepAliveNs {
            lastPing = now
            pingInFlight = (pingSequence, now)
        }
    }

    // MARK: Receiving

    /// Handles one record from the peer (a WebSocket binary message).
    public func receive(record: Bytes, now: UInt64) {
        guard isOpen else { return }
        lastReceive = now
        let frames: [QMuxFrame]
        do {
            frames = try QMuxFrame.decodeRecord(record, limit: Self.maxRecordSize)
        } catch {
            switch error {
            case .frameType: fail(QMuxTransportCode.protocolViolation, "\(error)")
            case .transportParameter: fail(QMuxTransportCode.transportParameter, "\(error)")
            default: fail(QMuxTransportCode.frameEncoding, "\(error)")
            }
            return
        }
        for frame in frames {
            guard isOpen else { return }
            handle(frame, now: now)
        }
    }

    private func handle(_ frame: QMuxFrame, now: UInt64) {
        if peerParameters == nil {
            guard case .transportParameters(let p) = frame else {
                fail(QMuxTransportCode.protocolViolation, "the first frame must be the transport parameters")
                return
            }
            accept(p)
            return
        }
        switch frame {
        case .padding, .dataBlocked, .streamDataBlocked, .streamsBlocked: break
        case .transportParameters:
            fail(QMuxTransportCode.protocolViolation, "transport parameters sent twice")
        case .stream(let id, let offset, let data, let fin): receiveStream(id, offset, data, fin)
        case .resetStream(let id, let code, let finalSize): receiveReset(id, code, finalSize)
        case .stopSending(let id, let code): receiveStopSending(id, code)
        case .maxData(let max): sendLimit = Swift.max(sendLimit, max)
        case .maxStreamData(let id, let max): receiveMaxStreamData(id, max)
        case .maxStreams(let bidirectional, let max):
            let kind = bidirectional ? 0 : 1
            if max > localStreamLimit[kind] {
                localStreamLimit[kind] = max
                events.append(.streamCredit(bidirectional: bidirectional))
            }
        case .connectionClose(let code, _, let reason):
            end(.transport(code: code, reason: reason, byPeer: true), sending: nil)
        case .applicationClose(let code, let reason):
            end(.application(code: code, reason: reason, byPeer: true), sending: nil)
        case .datagram:
            fail(QMuxTransportCode.protocolViolation, "DATAGRAM without max_datagram_frame_size")
        case .ping(let sequence): pingAnswerDue = sequence
        case .pingResponse(let sequence):
            guard let ping = pingInFlight, ping.sequence == sequence, pingSequenceSent(sequence) else { return }
            pingInFlight = nil
            // Clocks from different calls may disagree a little; a sample is never negative nor huge.
            let sample = min(now > ping.sentAt ? now - ping.sentAt : 0, 60_000_000_000)
            smoothedRTT = smoothedRTT == 0 ? sample : smoothedRTT - smoothedRTT / 8 + sample / 8
        }
    }

    private func pingSequenceSent(_ sequence: UInt64) -> Bool { sequence < pingSequence }

    private func accept(_ p: QMuxTransportParameters) {
        peerParameters = p
        sendLimit = p.initialMaxData
        localStreamLimit = [min(p.initialMaxStreamsBidi, 1 << 60), min(p.initialMaxStreamsUni, 1 << 60)]
        events.append(.ready)
        if localStreamLimit[0] > 0 { events.append(.streamCredit(bidirectional: true)) }
        if localStreamLimit[1] > 0 { events.append(.streamCredit(bidirectional: false)) }
    }

    /// The stream a peer frame names, opening it (and the peer's lower ones) when new. Nil when
    /// it is closed already, or after failing the connection for a rule broken.
    private func peerFrameStream(_ wireID: UInt64, needsReceive: Bool) -> Int64? {
        guard wireID < 1 << 62 else {
            fail(QMuxTransportCode.frameEncoding, "stream id beyond 2^62")
            return nil
        }
        let id = Int64(wireID)
        let bidirectional = QMuxStreamID.isBidirectional(id)
        let ours = QMuxStreamID.isClientInitiated(id) == isClient
        if let stream = streams[id] {
            if needsReceive ? stream.receive == nil : stream.send == nil {
                fail(
                    QMuxTransportCode.streamState, "stream \(id) has no \(needsReceive ? "receive" : "send") side here")
                return nil
            }
            return id
        }
        let kind = bidirectional ? 0 : 1
        let index = QMuxStreamID.index(id)
        if ours {
            guard index < nextLocalIndex[kind] else {
                fail(QMuxTransportCode.streamState, "stream \(id) was never opened")
                return nil
            }
            if !bidirectional && needsReceive {
                fail(QMuxTransportCode.streamState, "stream \(id) is send-only")
                return nil
            }
            return nil  // closed already
        }
        if !bidirectional && !needsReceive {
            fail(QMuxTransportCode.streamState, "stream \(id) is receive-only")
            return nil
        }
        guard index >= nextPeerIndex[kind] else { return nil }  // closed already
        guard index < peerStreamLimitSent[kind] else {
            fail(QMuxTransportCode.streamLimit, "stream \(id) beyond the limit of \(peerStreamLimitSent[kind])")
            return nil
        }
        // Opening index N opens the lower ones too (RFC 9000 §3.2); each is announced at its first frame.
        for i in nextPeerIndex[kind]...index {
            let opened = QMuxStreamID.make(index: i, bidirectional: bidirectional, byClient: !isClient)
            let peerLimit = peerParameters?.initialMaxStreamDataBidiLocal ?? 0
            streams[opened] = QMuxStream(
                id: opened, send: bidirectional ? QMuxStream.Send(limit: peerLimit) : nil,
                receive: receiveHalf(), announced: false)
        }
        nextPeerIndex[kind] = index + 1
        return id
    }

    private func announce(_ id: Int64) {
        guard streams[id]?.announced == false else { return }
        streams[id]?.announced = true
        events.append(.streamOpened(id))
    }

    private func receiveStream(_ wireID: UInt64, _ offset: UInt64, _ data: Bytes, _ fin: Bool) {
        guard let id = peerFrameStream(wireID, needsReceive: true), var receive = streams[id]?.receive else { return }
        announce(id)
        let end = offset + UInt64(data.count)  // the decoder bounds it by 2^62
        if let finalSize = receive.finalSize, end > finalSize || (fin && end != finalSize) {
            fail(QMuxTransportCode.finalSize, "stream \(id): data past its final size \(finalSize)")
            return
        }
        // A stream we stopped reading takes any offset (its data is dropped); others, the next one.
        guard offset == receive.received || (receive.done && offset <= receive.received) else {
            fail(QMuxTransportCode.protocolViolation, "stream \(id): data at \(offset), expected \(receive.received)")
            return
        }
        guard end <= receive.limit else {
            fail(QMuxTransportCode.flowControl, "stream \(id): \(end) bytes past its window of \(receive.limit)")
            return
        }
        let fresh = end - min(end, receive.received)
        receivedTotal += fresh
        guard receivedTotal <= receiveLimit else {
            fail(QMuxTransportCode.flowControl, "\(receivedTotal) bytes past the connection window of \(receiveLimit)")
            return
        }
        receive.received += fresh
        if fin { receive.finalSize = end }
        if receive.done {
            // We stopped reading: dropped, its credit back at once; the stream closes at its FIN.
            streams[id]?.receive = receive
            returnConnectionCredit(fresh)
            if fin { closeIfFinished(id) }
            return
        }
        receive.done = fin
        streams[id]?.receive = receive
        if !data.isEmpty || fin { events.append(.received(id, data, fin: fin)) }
        if fin { closeIfFinished(id) }
    }

    private func receiveReset(_ wireID: UInt64, _ code: UInt64, _ finalSize: UInt64) {
        guard let id = peerFrameStream(wireID, needsReceive: true), var receive = streams[id]?.receive else { return }
        guard finalSize >= receive.received, receive.finalSize.map({ $0 == finalSize }) ?? true else {
            fail(QMuxTransportCode.finalSize, "stream \(id): reset at \(finalSize) after \(receive.received) bytes")
            return
        }
        // The bytes announced and never sent count against the connection window, as QUIC's do.
        receivedTotal += finalSize - receive.received
        guard receivedTotal <= receiveLimit, finalSize <= receive.limit else {
            fail(QMuxTransportCode.flowControl, "stream \(id): reset at \(finalSize) past the window")
            return
        }
        announce(id)
        let wasDone = receive.done
        // Bytes never sent are credited at once; those delivered come back through consumed().
        let neverSent = finalSize - receive.received
        receive.received = finalSize
        receive.finalSize = finalSize
        receive.done = true
        streams[id]?.receive = receive
        returnConnectionCredit(neverSent)
        if !wasDone { events.append(.streamReset(id, code: code)) }
        closeIfFinished(id)
    }

    private func receiveStopSending(_ wireID: UInt64, _ code: UInt64) {
        guard let id = peerFrameStream(wireID, needsReceive: false), let send = streams[id]?.send else { return }
        announce(id)
        if !send.done { events.append(.stopSending(id, code: code)) }
    }

    private func receiveMaxStreamData(_ wireID: UInt64, _ max: UInt64) {
        guard let id = peerFrameStream(wireID, needsReceive: false), var send = streams[id]?.send else { return }
        announce(id)
        send.limit = Swift.max(send.limit, max)
        streams[id]?.send = send
    }

    // MARK: Sending

    /// The next record to send (at most the peer's record size), or nil when nothing is due or
    /// credit holds the rest back. After a close, the close record is the last one.
    public func nextRecord(now: UInt64) -> [UInt8]? {
        defer { checkDrained() }
        if isFinished { return nil }
        let limit = Int(min(peerParameters?.maxRecordSize ?? QMuxTransportParameters.defaultMaxRecordSize, 1 << 20))
        var record: [UInt8] = []
        func add(_ frame: QMuxFrame) -> Bool {
            let bytes = frame.encoded()
            guard record.count + bytes.count <= limit else { return false }
            record += bytes
            return true
        }
        if !parametersSent {
            parametersSent = true
            _ = add(.transportParameters(localParameters))
        }
        if let closeDue {
            _ = add(closeDue)
            self.closeDue = nil
            isFinished = true
            return record
        }
        guard isOpen else { return record.isEmpty ? nil : record }
        addControl(add, now: now)
        if peerParameters != nil { addStreamData(into: &record, limit: limit) }
        return record.isEmpty ? nil : record
    }

    private func addControl(_ add: (QMuxFrame) -> Bool, now: UInt64) {
        if let sequence = pingAnswerDue, add(.pingResponse(sequence)) { pingAnswerDue = nil }
        if let ping = pingInFlight, !pingSequenceSent(ping.sequence), add(.ping(ping.sequence)) {
            pingSequence += 1
            pingInFlight = (ping.sequence, now)
        }
        if maxDataDue, add(.maxData(receiveLimit)) { maxDataDue = false }
        for kind in 0..<2 where maxStreamsDue[kind] {
            if add(.maxStreams(bidirectional: kind == 0, max: peerStreamLimit[kind])) {
                maxStreamsDue[kind] = false
                peerStreamLimitSent[kind] = peerStreamLimit[kind]
            }
        }
        while let frame = resetsDue.first, add(frame) { resetsDue.removeFirst() }
        for id in maxStreamDataDue {
            guard let limit = streams[id]?.receive?.limit else {
                maxStreamDataDue.remove(id)
                continue
            }
            guard add(.maxStreamData(id: UInt64(id), max: limit)) else { break }
            maxStreamDataDue.remove(id)
        }
    }

    /// STREAM frames, highest send order first (then oldest stream), while the record has room.
    private func addStreamData(into record: inout [UInt8], limit: Int) {
        let candidates = sendPending.compactMap { streams[$0] }.sorted {
            let (a, b) = ($0.send?.order ?? 0, $1.send?.order ?? 0)
            return a != b ? a > b : $0.id < $1.id
        }
        for stream in candidates {
            // A STREAM frame's header is at most 25 bytes (type, id, offset, length).
            let room = limit - record.count - 25
            guard room > 0, var send = stream.send else { return }
            let n = min(send.sendable(connectionCredit: sendLimit - min(sendLimit, sentTotal)), room)
            guard n > 0 || (send.finQueued && send.queued == 0) else { continue }
            var data = [UInt8]()
            data.reserveCapacity(n)
            while data.count < n {
                let head = send.queue[0]
                let take = min(head.count, n - data.count)
                head[0..<take].withUnsafeBytes { data.append(contentsOf: $0) }
                if take == head.count { send.queue.removeFirst() } else { send.queue[0] = head.dropFirst(take) }
            }
            send.queued -= n
            unsentTotal -= n
            sentTotal += UInt64(n)
            let fin = send.finQueued && send.queued == 0
            record += QMuxFrame.stream(id: UInt64(stream.id), offset: send.offset, data: Bytes(data), fin: fin)
                .encoded()
            send.offset += UInt64(n)
            if fin { send.done = true }
            if send.queued == 0 && !send.finQueued || fin { sendPending.remove(stream.id) }
            streams[stream.id]?.send = send
            if fin { closeIfFinished(stream.id) }
        }
    }

    /// Whether a record is due now (the carrier should ask for one when it can write).
    public var wantsToSend: Bool {
        if isFinished { return false }
        if !parametersSent || closeDue != nil { return true }
        guard isOpen else { return false }
        if pingAnswerDue != nil || maxDataDue || !maxStreamDataDue.isEmpty || !resetsDue.isEmpty { return true }
        if maxStreamsDue.contains(true) { return true }
        if let ping = pingInFlight, !pingSequenceSent(ping.sequence) { return true }
        guard peerParameters != nil else { return false }
        let credit = sendLimit - min(sendLimit, sentTotal)
        return sendPending.contains { streams[$0]?.send?.hasWork(connectionCredit: credit) ?? false }
    }
}
