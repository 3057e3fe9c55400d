// SPDX-License-Identifier: MIT

/// What a ``MoqtSessionCore`` holds on a peer's behalf right now: every count a peer can feed,
/// for the stateful fuzzer's invariants and for stats.
package struct MoqtResourceUsage: Sendable, Equatable {
    /// The peer's requests open (its window of request ids is bounded by this).
    package var openPeerRequests: UInt64
    /// Draft-16: the peer's request ids that overtook a lower one (another stream came first).
    package var requestIDsAhead: Int
    /// Subscriptions we serve, namespace subscriptions we serve, namespaces the peer published to us.
    package var servedSubscriptions: Int
    package var servedNamespaces: Int
    package var peerNamespaces: Int
    /// Group streams of the peer's being read, and those waiting for their alias.
    package var incomingGroups: Int
    package var unknownAliasStreams: Int
    /// Bytes held for group streams waiting for their alias.
    package var heldBytes: Int
    /// Our requests waiting for the peer's MAX_REQUEST_ID.
    package var queuedRequests: Int
    /// Broadcasts announced to our namespace subscriptions (the largest of them).
    package var announcedToUs: Int
    /// Group streams of ours the core still tracks.
    package var outgoingGroups: Int
    /// Served subscriptions with groups due that wait for room (stream credit, or unsent bytes to drain).
    package var waitingForRoom: Int
    /// Track aliases the peer gave, and our subscriptions open (an alias belongs to one of them).
    package var aliases: Int
    package var ownSubscriptions: Int
}

extension MoqtSessionCore {
    /// What the core holds on the peer's behalf.
    package var resourceUsage: MoqtResourceUsage {
        MoqtResourceUsage(
            openPeerRequests: openPeerRequests, requestIDsAhead: peerRequestsAhead.count,
            servedSubscriptions: served.count,
            servedNamespaces: servedNamespaces.count, peerNamespaces: peerPublished.count,
            incomingGroups: incomingGroups.count, unknownAliasStreams: unknownAliasStreams.count,
            heldBytes: incomingGroups.values.reduce(0) { $0 + $1.heldBytes }, queuedRequests: waitingForRequestID.count,
            announcedToUs: namespaceRequests.values.map(\.announced.count).max() ?? 0,
            outgoingGroups: outgoingGroups.count, waitingForRoom: waitingForRoom.count, aliases: aliases.count,
            ownSubscriptions: subscriptions.count)
    }
}
