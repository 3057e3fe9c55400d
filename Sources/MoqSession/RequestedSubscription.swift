// SPDX-License-Identifier: MIT
import MoqSync
import MoqWire

/// Our subscription to a peer's track: SUBSCRIBE on a bidi stream, replies
/// START/END/DROP on it, groups on uni streams (or datagrams) written into a
/// local ``TrackProducer`` that consumers read.
final class RequestedSubscription: StreamHandler {
    let session: HandlerContext
    let id: UInt64
    let broadcast: String
    let track: TrackProducer
    /// What the track ends with when the session closes under it (a relay feeding others: INTERNAL);
    /// nil leaves it open for another subscription to go on feeding (a relay's failover).
    var sessionClosedCode: StreamErrorCode? = .sessionClosed
    /// Asked when the peer ends the subscription with an error (a reset): true when the caller takes
    /// the track over (a relay's failover to another route), which then stays open.
    var onLost: ((StreamErrorCode) -> Bool)?
    private(set) var range: SubscriptionRange
    private var stream: Int64?
    private var buffer = StreamBuffer()
    var bufferedBytes: Int { buffer.buffered }
    private var startGroup: UInt64?
    private var endGroup: UInt64?
    /// Sequences seen (group stream, datagram or DROP) before START arrived.
    private var early = SequenceSet()
    /// Sequences seen from START on (every sequence below its watermark was seen).
    private var seen: SequenceSet?
    private var activeGroups = 0
    /// The group streams being read, by stream id (at most the peer's open streams): stopped at
    /// once when we cancel, so that what the publisher still has queued for them is not sent.
    /// Weak: a reader holds its subscription, and a session torn down without closing must not
    /// leave the pair holding each other.
    private var readers: [Int64: WeakReference<GroupReader>] = [:]
    private var graceTimer: (any Cancellable)?
    private var done = false

    /// How long to wait for group streams still in flight after the publisher's FIN.
    static let endGrace = Duration.seconds(2)

    init(session: HandlerContext, id: UInt64, broadcast: String, track: TrackProducer, range: SubscriptionRange) {
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
            session.adopt(stream, by: self)
            session.setSendOrder(stream, SendOrder.control)
            let request = Subscribe(id: id, broadcast: broadcast, track: track.name, range: range)
            session.write(
                stream, Bytes([UInt8(BidiStreamType.subscribe.rawValue)] + request.encoded()), fin: false)
        }
    }

    func update(_ range: SubscriptionRange) {
        self.range = range
        guard !done, let stream else { return }
        session.write(stream, Bytes(SubscribeUpdate(range: range).encoded()), fin: false)
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
                    if seen == nil {
                        var set = SequenceSet(watermark: group, maxRanges: Self.maxSeenRanges)
                        if early.watermark > 0 { set.insert(0...(early.watermark - 1)) }
                        for r in early.ranges { set.insert(r) }
                        seen = set
                        early = SequenceSet()
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
                // Saturating: the newest group may be numbered 2^62 − 1.
                endGroup = min(
                    max(seen?.watermark ?? 0, track.latestSequence.map { VarInt.saturatingAdd($0, 1) } ?? 0),
                    VarInt.max)
            }
            if !checkComplete() {
                let box = WeakReference(self)
                graceTimer = session.scheduler.schedule(after: Self.endGrace) { box.value?.finishTrack() }
            }
        } else {
            _ = checkComplete()
        }
    }

    func peerReset(wireCode: UInt64) {
        guard !done else { return }
        let code = StreamErrorCode(wireValue: wireCode) ?? .internal
        fail(code, abort: false, keepTrack: onLost?(code) ?? false)
    }

    func peerStopSending(wireCode: UInt64) {
        // A raw (unmapped) code is the Rust stack dropping a receive half: noise.
        guard !done, let code = StreamErrorCode(wireValue: wireCode) else { return }
        fail(code, abort: true, keepTrack: onLost?(code) ?? false)
    }

    // MARK: Groups

    /// A group stream with our id arrived: returns where to write its frames, or nil to refuse
    /// it (a duplicate, or the subscription is over). A stream that starts past frame 0 is taken only where we asked for
    /// that frame (our start group): a partial group is never cached as if it were whole (a relay
    /// would serve it to viewers without its keyframe), as moq-lite says a publisher must skip a
    /// group it cannot serve from the frame asked for.
    func groupStarted(sequence: UInt64, frameStart: UInt64 = 0, reader: GroupReader) -> GroupProducer? {
        guard !done else { return nil }
        markSeen(sequence...sequence)
        guard frameStart == 0 || frameStart == range.firstFrame(of: sequence) else {
            session.counters.partialGroupsRefused += 1
            return nil
        }
        guard let producer = track.createGroup(sequence: sequence) else { return nil }
        activeGroups += 1
        readers[reader.stream] = WeakReference(reader)
        session.counters.groupsReceived += 1
        return producer
    }

    /// A group stream ended (FIN, reset or malformed).
    func groupEnded(_ reader: GroupReader) {
        readers[reader.stream] = nil
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

    /// Disjoint ranges of sequences kept above the watermark (bounds what DROP floods cost).
    static let maxSeenRanges = 1024

    private func markSeen(_ range: ClosedRange<UInt64>) {
        if seen != nil {
            seen?.insert(range)
        } else {
            early.insert(range)
        }
    }

    /// Finishes the track once END arrived and every group below it was seen and ended.
    private func checkComplete() -> Bool {
        guard !done, let end = endGroup else { return false }
        let allSeen = (seen?.watermark ?? end) >= end || end == 0
        guard allSeen, activeGroups == 0 else { return false }
        finishTrack()
        return true
    }

    private func finishTrack() {
        guard !done else { return }
        done = true
        graceTimer?.cancel()
        track.finish(end: endGroup ?? VarInt.saturatingAdd(track.latestSequence ?? 0, 1))
        if let stream {
            session.finish(stream)
            session.detach(stream)
        }
        session.ownSubscriptions[id] = nil
    }

    // MARK: Ending

    private func fail(_ code: StreamErrorCode, abort: Bool = false, keepTrack: Bool = false) {
        guard !done else { return }
        done = true
        if !keepTrack { track.setSubscriptionStart(track.subscriptionStart.sequence ?? 0) }
        graceTimer?.cancel()
        if let stream {
            if abort { session.abortStream(stream, code == .malformedTrack ? .malformedTrack : .cancel) }
            session.detach(stream)
        }
        session.ownSubscriptions[id] = nil
        if !keepTrack { track.abort(code) }
        let open = readers.values.compactMap(\.value)
        readers = [:]
        if abort { for reader in open { reader.stop(.cancel) } }
    }

    /// Ends the subscription on our side (RESET + STOP_SENDING with CANCEL), and stops every group
    /// stream still arriving: a player that moved to another rendition does not want what the
    /// publisher has queued for this one (under congestion, seconds of it) to take the path.
    func cancel() {
        guard !done else { return }
        fail(.cancel, abort: true)
    }

    /// Ends the subscription on the wire as ``cancel()`` does, but leaves the track open: another
    /// subscription (a relay's other route to the same broadcast) goes on feeding it.
    func detach() {
        guard !done else { return }
        fail(.cancel, abort: true, keepTrack: true)
    }

    func sessionClosed() {
        guard !done else { return }
        done = true
        graceTimer?.cancel()
        readers = [:]
        if let sessionClosedCode { track.abort(sessionClosedCode) }
    }
}

/// An incoming Group stream: its header names our subscription, its frames go
/// into that subscription's track.
final class GroupReader: StreamHandler {
    let session: HandlerContext
    let stream: Int64
    private var decoder: FrameDecoder
    private var subscription: RequestedSubscription?
    private var producer: GroupProducer?
    private var done = false
    /// Only the frame being assembled: complete frames are in the track's cache.
    var bufferedBytes: Int { done ? 0 : decoder.bufferedBytes }
    /// Credit goes back on arrival: a frame may be larger than a stream window, so its
    /// assembly is bounded by the session's budget instead.
    var holdsCredit: Bool { false }

    init(session: HandlerContext, stream: Int64) {
        self.session = session
        self.stream = stream
        decoder = FrameDecoder(expectHeader: true, frameLimit: session.config.limits.maxFrameBytes)
    }

    func received(_ data: UnsafeRawBufferPointer, fin: Bool) {
        guard !done else { return }
        do {
            for event in try decoder.feed(data, fin: fin) {
                switch event {
                case .header(let header):
                    guard let sub = session.ownSubscriptions[header.subscribeID],
                        let producer = sub.groupStarted(
                            sequence: header.sequence, frameStart: header.frameStart, reader: self)
                    else {
                        // Unknown subscription, a duplicate or a partial group not asked for: not wanted.
                        session.abortStream(stream, .cancel, resetSend: false)
                        return close()
                    }
                    subscription = sub
                    self.producer = producer
                case .frame(let frame):
                    guard let producer else { break }
                    guard producer.write(frame) else {
                        // The group closed under us (too large, evicted, track ended): stop the stream.
                        var code = StreamErrorCode.cancel
                        if case .aborted(let c) = producer.status { code = c }
                        session.abortStream(stream, code, resetSend: false)
                        return close()
                    }
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

    /// Our subscription ended: the publisher stops sending this group (STOP_SENDING).
    func stop(_ code: StreamErrorCode) {
        guard !done else { return }
        session.abortStream(stream, code, resetSend: false)
        producer?.abort(code)
        close()
    }

    private func close() {
        guard !done else { return }
        done = true
        session.detach(stream)
        if producer != nil { subscription?.groupEnded(self) }
        producer = nil
        subscription = nil
    }

    func sessionClosed() {
        guard !done else { return }
        done = true
        subscription = nil
        producer?.abort(.sessionClosed)
    }
}
