// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqWire
import MoqtWire

/// The peer's FETCH, served from what the track's cache holds: FETCH_OK, then one fetch stream with
/// the range's objects in ascending order (object id = frame index), FIN.
///
/// - Standalone: `start` up to `end` (`end.object` 0: the whole of `end.group`).
/// - Joining (relative or absolute): from the start of the group asked up to where the joined
///   subscription starts. SwiftMoQ starts a LargestObject subscription at the start of the latest
///   group, so a joining fetch brings whole groups before it (a viewer's backfill).
///
/// Bounded: a fetch writes at most ``MoqtSessionConfig/maxUnsentBytes`` of payload (FETCH_OK's end
/// says where it stopped), and is refused while the connection already holds that much unsent.
/// Objects not in the cache are not fetched upstream: a relay answers from what it holds.
extension MoqtSessionCore {
    /// FETCH error codes (draft-14's FETCH_ERROR, draft-16's REQUEST_ERROR).
    enum FetchCode {
        static func invalidRange(_ version: MoqtVersion) -> UInt64 { version == .draft14 ? 0x5 : 0x11 }
        static func invalidJoiningRequest(_ version: MoqtVersion) -> UInt64 { version == .draft14 ? 0x7 : 0x32 }
        /// Draft-14 only: nothing in the range (draft-16 answers with an empty fetch stream).
        static let noObjects: UInt64 = 0x6
    }

    func serveFetch(_ request: MoqtWire.Fetch) {
        func refuse(_ code: UInt64, _ reason: String) {
            counters.fetchesRefused += 1
            refuseRequest(.fetch, request.requestID, code: code, reason: reason)
        }
        let track: TrackProducer
        let start: Location
        let end: Location  // exclusive; object 0: up to the end of the group before
        switch request.kind {
        case .standalone(let namespace, let name, let from, let to):
            // Only a track that exists: a relay's on-demand track would subscribe upstream for good
            // (a FETCH adds no observer whose leaving would end it).
            switch servedTrack(namespace: namespace, name: name, existingOnly: true) {
            case .failure(let refusal): return refuse(refusal.code, refusal.reason)
            case .success(let t): track = t
            }
            start = from
            end = to.object == 0 ? Location(group: to.group &+ 1, object: 0) : to
            guard start < end else {
                return refuse(FetchCode.invalidRange(version), "a range ending at \(to) before \(from)")
            }
        case .relativeJoining(let id, _), .absoluteJoining(let id, _):
            guard let joined = served[id] else {
                return refuse(FetchCode.invalidJoiningRequest(version), "no subscription \(id) to join")
            }
            guard joined.request.filter == .largestObject else {
                return close(.protocolViolation, reason: "a joining FETCH of a subscription without LargestObject")
            }
            guard let first = joined.start else {
                return refuse(FetchCode.invalidRange(version), "subscription \(id) has no content yet")
            }
            track = joined.track
            switch request.kind {
            case .relativeJoining(_, let offset):
                start = Location(group: first >= offset ? first - offset : 0, object: 0)
            case .absoluteJoining(_, let group): start = Location(group: group, object: 0)
            case .standalone: return
            }
            end = Location(group: first, object: joined.startObject)
            guard start <= end else {
                return refuse(
                    FetchCode.invalidRange(version), "a joining start \(start) after the subscription's \(end)")
            }
        }
        // Past the largest object published (exclusive): {Largest.Group, Largest.Object + 1}.
        guard let newest = track.latestGroup else {
            return refuse(FetchCode.invalidRange(version), "nothing published yet")
        }
        let largestEnd = Location(group: newest.sequence, object: UInt64(track.frameCount(of: newest)))
        guard start < largestEnd else {
            return refuse(FetchCode.invalidRange(version), "nothing published from \(start) on")
        }
        guard transport.totalUnsentBytes < config.maxUnsentBytes else {
            return refuse(MoqtCode.internalError, "busy: retry later")
        }
        var objects: [FetchObject] = []
        var bytes = 0
        var cut = false
        collect: for group in track.groups(from: start.group) {
            guard group.sequence <= end.group else { break }
            let frames = track.frames(of: group, from: 0).frames
            for (index, frame) in frames.enumerated() {
                let location = Location(group: group.sequence, object: UInt64(index))
                guard location >= start, location < end else { continue }
                // At least one object comes, whatever its size (a range that never fits would never be fetched).
                let cost = frame.payload.count + Self.fetchObjectOverhead
                guard objects.isEmpty || bytes + cost <= config.maxUnsentBytes else {
                    cut = true
                    break collect
                }
                bytes += cost
                objects.append(FetchObject(group: location.group, id: location.object, payload: frame.payload))
            }
        }
        if objects.isEmpty && version == .draft14 {
            return refuse(FetchCode.noObjects, "no objects in \(start)..<\(end)")
        }
        guard let stream = transport.openStream(bidirectional: false) else {
            return refuse(MoqtCode.internalError, "no stream credit: retry later")
        }
        counters.fetchesServed += 1
        // FETCH_OK's End Location, "+1" as the request's: what the response covers (cut short, or up to
        // the largest object published, or the range asked); object 0 says "the whole group before".
        let covered =
            cut
            ? objects.last.map { Location(group: $0.group, object: $0.id &+ 1) } ?? start : min(end, largestEnd)
        let wireEnd =
            objects.isEmpty
            ? start : covered.object == 0 ? Location(group: covered.group &- 1, object: 0) : covered
        let endOfTrack: Bool =
            if case .finished? = track.end, !cut, covered == largestEnd { true } else { false }
        if request.groupOrder == .descending {
            // Groups newest first, objects in order within each.
            objects = Dictionary(grouping: objects, by: \.group).sorted { $0.key > $1.key }.flatMap(\.value)
        }
        send(
            .fetchOk(
                FetchOk(
                    requestID: request.requestID,
                    groupOrder: request.groupOrder == .descending ? .descending : .ascending,
                    endOfTrack: endOfTrack, end: wireEnd)))
        transport.setSendOrder(stream, Int64(request.subscriberPriority ^ 0xFF) << 48)
        var w = WireWriter()
        FetchHeader.encode(requestID: request.requestID, into: &w)
        for object in objects { object.encode(into: &w, version: version) }
        counters.objectsSent += UInt64(objects.count)
        transport.write(stream, Bytes(w.bytes), fin: true)
        servedFetchStreams[stream] = request.requestID
        peerRequestEnded()
    }

    /// FETCH_CANCEL: the fetch's stream, if still being sent, is reset.
    func fetchCancelled(_ id: UInt64) {
        guard let stream = servedFetchStreams.first(where: { $0.value == id })?.key else { return }
        servedFetchStreams[stream] = nil
        transport.resetStream(stream, code: MoqtCode.cancelled)
    }

    /// Answers a request of the peer's with an error (its kind's message on draft-14, REQUEST_ERROR on
    /// 16); its id's place returns to the peer.
    func refuseRequest(_ kind: RequestKind, _ id: UInt64, code: UInt64, reason: String) {
        send(
            .requestError(
                RequestError(kind: version == .draft14 ? kind : nil, requestID: id, code: code, reason: reason)))
        peerRequestEnded()
    }

    /// What a fetched object costs in the byte budget beyond its payload.
    static let fetchObjectOverhead = 16

    /// A track of the origin for the peer's request, or the refusal (code and reason) it gets.
    /// `existingOnly`: a track the broadcast does not hold yet is not made (a relay would subscribe
    /// upstream for it).
    func servedTrack(namespace: TrackNamespace, name: Bytes, existingOnly: Bool = false)
        -> Result<TrackProducer, Refusal>
    {
        guard let path = namespace.path, let text = String(validating: name.array, as: UTF8.self) else {
            return .failure(
                Refusal(code: MoqtCode.doesNotExist(version), reason: "not a SwiftMoQ path (binary fields)"))
        }
        guard let broadcast = publishOrigin?.broadcast(path) else {
            return .failure(Refusal(code: MoqtCode.doesNotExist(version), reason: "no broadcast \(path)"))
        }
        guard let track = existingOnly ? broadcast.existingTrack(text) : broadcast.track(text) else {
            return .failure(Refusal(code: MoqtCode.doesNotExist(version), reason: "no track \(text) in \(path)"))
        }
        return .success(track)
    }

    /// Why a request is refused.
    struct Refusal: Error {
        let code: UInt64
        let reason: String
    }
}
