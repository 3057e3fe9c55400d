// SPDX-License-Identifier: MIT
import MoqWire

/// Our subscription to a peer's track: SUBSCRIBE on a bidi stream, replies
/// START/END/DROP on it, groups on uni streams (or datagrams) written into a
/// local ``TrackProducer`` that consumers read.
final class RequestedSubscription: StreamHandler {
    unowned let session: SessionCore
    let id: UInt64
    let broadcast: String
    let track: TrackProducer
    private(set) var range: SubscriptionRange
    private var stream: Int64?
    private var buffer = StreamBuffer()
    private var startGroup: UInt64?
    private var endGroup: UInt64?
    /// Sequences seen (group stream, datagram or DROP) at or above the watermark.
    private var seen = Set<UInt64>()
    /// Every sequence below this has been seen (valid once START is known).
    private var watermark: UInt64?
    private var activeGroups = 0
    private var graceTimer: (any Cancellable)?
    private var done = false

    /// How long to wait for group streams still in flight after the publisher's FIN.
    static let endGrace = Duration.seconds(2)

    init(session: SessionCore, id: UInt64, broadcast: String, track: TrackProducer, range: SubscriptionRange) {
        self.session = session
        self.id = id
        self.broadcast = broadcast
        self.track = track
        self.range = range
    }

    func start() {
        guard !done else { return }
        track.expectSubscriptionStart()
        if track.info == nil {
            session.trackInfo(broadcast: broadcast, track: track.name) { [weak self] result in
                guard let self, !self.done else { return }
                switch result {
                case .success(let info): self.track.setInfo(info)
                case .failure(let code): self.fail(code)
                }
            }
        }
        session.openStream(bidirectional: true, isCancelled: { [weak self] in self?.done ?? true }) { [self] stream in
            self.stream = stream
            session.handlers[stream] = self
            session.transport.setSendOrder(stream, SendOrder.control)
            let request = Subscribe(id: id, broadcast: broadcast, track: track.name, range: range)
            session.transport.write(
                stream, Bytes([UInt8(BidiStreamType.subscribe.rawValue)] + request.encoded()), fin: false)
        }
    }

    func update(_ range: SubscriptionRange) {
        self.range = range
        guard !done, let stream else { return }
        session.transport.write(stream, Bytes(SubscribeUpdate(range: range).encoded()), fin: false)
    }

    // MARK: Replies

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        buffer.append(data)
        do {
            while let response = try buffer.nextSubscribeResponse() {
                switch response {
                case .start(let group):
                    startGroup = group
                    track.setSubscriptionStart(group)
                    if watermark == nil {
                        watermark = group
                        compact()
                    }
                case .end(let group):
                    endGroup = group
                case .drop(let start, let end, let code):
                    guard end >= start else { continue }
                    track.markDropped(start...end, code: StreamErrorCode(rawValue: code))
                    markSeen(start...end)
                case .unknown:
                    break
                }
            }
        } catch {
            session.counters.malformedStreams += 1
            return fail(.malformedTrack, abort: true)
        }
        if fin {
            if endGroup == nil {
                // FIN without END: the publisher ended the subscription without ending the track.
                endGroup = max(watermark ?? 0, (track.latestSequence ?? 0) + (track.latestSequence == nil ? 0 : 1))
            }
            if !checkComplete() {
                let box = WeakLoopBox(self)
                graceTimer = session.scheduler.schedule(after: Self.endGrace) { box.value?.finishTrack() }
            }
        } else {
            _ = checkComplete()
        }
    }

    func peerReset(wireCode: UInt64) {
        fail(StreamErrorCode(wireValue: wireCode) ?? .internal, abort: false)
    }

    func peerStopSending(wireCode: UInt64) {
        // A raw (unmapped) code is the Rust stack dropping a receive half: noise.
        guard let code = StreamErrorCode(wireValue: wireCode) else { return }
        fail(code, abort: true)
    }

    // MARK: Groups

    /// A group stream with our id arrived: returns where to write its frames, or
    /// nil to refuse it (duplicate, or the subscription is over).
    func groupStarted(sequence: UInt64) -> GroupProducer? {
        guard !done else { return nil }
        markSeen(sequence...sequence)
        guard let producer = track.createGroup(sequence: sequence) else { return nil }
        activeGroups += 1
        session.counters.groupsReceived += 1
        return producer
    }

    /// A group stream ended (FIN, reset or malformed).
    func groupEnded() {
        activeGroups -= 1
        _ = checkComplete()
    }

    func datagram(_ datagram: Datagram) {
        guard !done else { return }
        markSeen(datagram.sequence...datagram.sequence)
        if track.receiveDatagram(
            sequence: datagram.sequence, Frame(timestamp: datagram.timestamp, payload: datagram.payload))
        {
            session.counters.datagramsReceived += 1
            session.counters.framesReceived += 1
            session.counters.bytesReceived += UInt64(datagram.payload.count)
        }
        _ = checkComplete()
    }

    private func markSeen(_ range: ClosedRange<UInt64>) {
        if let w = watermark, range.lowerBound <= w {
            if range.upperBound >= w { watermark = range.upperBound + 1 }
        } else if range.count <= 4096 {
            for s in range { seen.insert(s) }
        } else {
            // An enormous DROP: remember only its end.
            seen.insert(range.upperBound)
        }
        compact()
    }

    private func compact() {
        guard var w = watermark else { return }
        seen = seen.filter { $0 >= w }
        while seen.remove(w) != nil { w += 1 }
        watermark = w
    }

    /// Finishes the track once END arrived and every group below it was seen and ended.
    private func checkComplete() -> Bool {
        guard !done, let end = endGroup else { return false }
        let allSeen = (watermark ?? end) >= end || end == 0
        guard allSeen, activeGroups == 0 else { return false }
        finishTrack()
        return true
    }

    private func finishTrack() {
        guard !done else { return }
        done = true
        graceTimer?.cancel()
        track.finish(end: endGroup ?? ((track.latestSequence ?? 0) + 1))
        if let stream {
            session.transport.finish(stream)
            session.detach(stream)
        }
        session.ownSubscriptions[id] = nil
    }

    // MARK: Ending

    private func fail(_ code: StreamErrorCode, abort: Bool = false) {
        guard !done else { return }
        done = true
        track.setSubscriptionStart(track.subscriptionStart.sequence ?? 0)
        graceTimer?.cancel()
        if let stream {
            if abort { session.abortStream(stream, code == .malformedTrack ? .malformedTrack : .cancel) }
            session.detach(stream)
        }
        session.ownSubscriptions[id] = nil
        track.abort(code)
    }

    /// Ends the subscription on our side (RESET + STOP_SENDING with CANCEL).
    func cancel() {
        guard !done else { return }
        fail(.cancel, abort: true)
    }

    func sessionClosed() {
        guard !done else { return }
        done = true
        graceTimer?.cancel()
        track.abort(.sessionClosed)
    }
}

/// An incoming Group stream: its header names our subscription, its frames go
/// into that subscription's track.
final class GroupReader: StreamHandler {
    unowned let session: SessionCore
    let stream: Int64
    private var decoder = FrameDecoder(expectHeader: true)
    private var subscription: RequestedSubscription?
    private var producer: GroupProducer?
    private var done = false

    init(session: SessionCore, stream: Int64) {
        self.session = session
        self.stream = stream
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        do {
            for event in try decoder.feed(data, fin: fin) {
                switch event {
                case .header(let header):
                    guard let sub = session.ownSubscriptions[header.subscribeID],
                        let producer = sub.groupStarted(sequence: header.sequence)
                    else {
                        // Unknown subscription, or a duplicate: not wanted.
                        session.abortStream(stream, .cancel, resetSend: false)
                        return close()
                    }
                    subscription = sub
                    self.producer = producer
                case .frame(let frame):
                    producer?.write(frame)
                    session.counters.framesReceived += 1
                    session.counters.bytesReceived += UInt64(frame.payload.count)
                }
            }
            if fin {
                producer?.finish()
                close()
            }
        } catch {
            session.counters.malformedStreams += 1
            session.abortStream(stream, error.streamCode, resetSend: false)
            producer?.abort(.malformedTrack)
            close()
        }
    }

    func peerReset(wireCode: UInt64) {
        guard !done else { return }
        producer?.abort(StreamErrorCode(wireValue: wireCode) ?? .cancel)
        close()
    }

    private func close() {
        guard !done else { return }
        done = true
        session.detach(stream)
        if producer != nil { subscription?.groupEnded() }
        producer = nil
        subscription = nil
    }

    func sessionClosed() {
        guard !done else { return }
        done = true
        producer?.abort(.sessionClosed)
    }
}
