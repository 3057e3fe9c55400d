// SPDX-License-Identifier: MIT
import MoqModel
import MoqSession
import MoqSync
import MoqWire
import MoqtWire

/// A group stream from the peer: decoded as its bytes arrive and written into the subscription's
/// track. Until SUBSCRIBE_OK names its alias the stream waits (bounded in number and time); a group
/// the track already has, or an alias nobody claims, is stopped.
final class IncomingSubgroup {
    let stream: Int64
    var decoder: SubgroupStreamDecoder
    /// Objects decoded before the stream's subscription was known.
    var held: [SubgroupObject] = []
    var heldBytes = 0
    var producer: GroupProducer?
    /// The subscription the stream's alias named, once it did.
    weak var subscription: MoqtSubscription?
    var finReceived = false
    var waitTimer: (any Cancellable)?
    /// The objects a joining FETCH brought from before the stream's first one (written first).
    var prefix: [UInt64: Bytes] = [:]

    init(stream: Int64, version: MoqtVersion) {
        self.stream = stream
        decoder = SubgroupStreamDecoder(version: version)
    }
}

extension MoqtSessionCore {
    func receiveGroup(_ group: IncomingSubgroup, _ bytes: [UInt8], fin: Bool) {
        group.finReceived = group.finReceived || fin
        let events: [SubgroupStreamDecoder.Event]
        do {
            events = try group.decoder.feed(bytes, fin: fin)
        } catch {
            return close(.protocolViolation, reason: "group stream \(group.stream): \(error)")
        }
        for case .object(let object) in events {
            group.held.append(object)
            // What an object costs held, not only its payload (empty objects are 3 bytes on the wire).
            group.heldBytes += object.payload.count + Self.heldObjectOverhead
        }
        guard let header = group.decoder.header else { return }
        if group.producer == nil {
            guard let subscription = aliases[header.trackAlias] else {
                // Held for SUBSCRIBE_OK: a bounded amount (its credit is already returned).
                guard group.heldBytes + group.decoder.buffered <= Self.maxHeldBytes else {
                    return stopUnclaimed(group.stream)
                }
                return waitForAlias(group)
            }
            group.waitTimer?.cancel()
            if group.subscription == nil {
                group.subscription = subscription
                subscription.streamArrived()
                counters.groupsReceived += 1
            }
            // The group a late joiner came in the middle of waits for its first objects (a joining FETCH).
            guard joinedGroupIsWhole(group, subscription, header) else { return }
            guard let producer = subscription.track.createGroup(sequence: header.group) else {
                // A group the track already has (or one older than it keeps): not read twice.
                transport.stopSending(group.stream, code: MoqtCode.cancelled)
                incomingGroups[group.stream] = nil
                return subscription.streamEnded()
            }
            group.producer = producer
            for id in group.prefix.keys.sorted() {
                guard let payload = group.prefix[id] else { continue }
                counters.objectsReceived += 1
                producer.write(payload, timestamp: 0)
            }
            group.prefix = [:]
        }
        guard let producer = group.producer else { return }
        for object in group.held {
            counters.objectsReceived += 1
            switch object.status {
            case .normal:
                // moq-dev's object ids are frame indices; objects are kept in the order they came.
                producer.write(object.payload, timestamp: 0)
            case .endOfGroup:
                producer.finish()
            case .endOfTrack:
                producer.finish()
                producer.track.finish()
            default:
                continue
            }
        }
        group.held = []
        group.heldBytes = 0
        if group.finReceived {
            producer.finish()
            incomingGroups[group.stream] = nil
            group.subscription?.streamEnded()
        }
    }

    /// What a group stream may hold while its alias is unknown (or while its group waits for a
    /// joining FETCH), objects counted with ``heldObjectOverhead``.
    static let maxHeldBytes = 1024 * 1024
    /// What a held object costs beyond its payload.
    static let heldObjectOverhead = 64

    /// A group stream whose alias no subscription has yet: held for SUBSCRIBE_OK, within bounds.
    func waitForAlias(_ group: IncomingSubgroup) {
        guard !unknownAliasStreams.contains(group.stream) else { return }
        guard unknownAliasStreams.count < config.maxUnknownAliasStreams else { return stopUnclaimed(group.stream) }
        unknownAliasStreams.append(group.stream)
        let box = WeakReference(self)
        let stream = group.stream
        group.waitTimer?.cancel()
        group.waitTimer = scheduler.schedule(after: config.unknownAliasWait) {
            guard let self = box.value, self.unknownAliasStreams.contains(stream) else { return }
            self.stopUnclaimed(stream)
        }
    }

    /// Stops a group stream no subscription claimed (in time, in number or in size).
    func stopUnclaimed(_ stream: Int64) {
        unknownAliasStreams.removeAll { $0 == stream }
        counters.unknownAliasStreamsStopped += 1
        transport.stopSending(stream, code: MoqtCode.cancelled)
        incomingGroups[stream] = nil
    }
}
