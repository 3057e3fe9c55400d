// SPDX-License-Identifier: MIT

/// Counters a session keeps (read on the session thread).
public struct SessionCounters: Sendable, Equatable {
    public init() {}
    public var setupReceived = false
    public var groupsSent: UInt64 = 0
    public var groupsReceived: UInt64 = 0
    public var framesSent: UInt64 = 0
    public var framesReceived: UInt64 = 0
    public var bytesSent: UInt64 = 0
    public var bytesReceived: UInt64 = 0
    public var groupsResetAsOld: UInt64 = 0
    public var groupsDroppedForCredit: UInt64 = 0
    public var streamCreditWaits: UInt64 = 0
    public var malformedStreams: UInt64 = 0
    public var malformedDatagrams: UInt64 = 0
    public var refusedRequests: UInt64 = 0
    public var servedSubscriptionsCompleted: UInt64 = 0
    public var limitsHit: UInt64 = 0
    /// Groups a served subscription dropped (SUBSCRIBE_DROP) without opening a stream: they
    /// fell out of the subscriber's latency budget, or out of the cache, while waiting for room.
    public var groupsDroppedForBudget: UInt64 = 0
    public var datagramsSent: UInt64 = 0
    public var datagramsReceived: UInt64 = 0
    /// Group streams refused because they started past frame 0 of a group we did not ask for
    /// from that frame (a partial group is never cached as a whole one).
    public var partialGroupsRefused: UInt64 = 0
}

/// What a session holds on its peer's behalf (see ``SessionCore/resourceUsage``).
public struct SessionResourceUsage: Sendable, Equatable, CustomStringConvertible {
    /// Bytes in incomplete incoming messages and frames (bounded by ``SessionLimits/maxIncomingBytes``).
    public var incomingBufferedBytes: Int
    /// The part of those whose flow-control credit has not been returned yet.
    public var incomingCreditHeldBytes: Int
    /// Streams with a handler (open, or finished and waiting for the transport to close them).
    public var streamHandlers: Int
    public var servedSubscriptions: Int
    public var servedTrackRequests: Int
    public var servedFetches: Int
    public var servedAnnounces: Int
    public var servedProbes: Int
    /// Broadcasts the peer announced to us.
    public var announcedBroadcasts: Int
    /// Our subscriptions to the peer.
    public var ownSubscriptions: Int
    /// Group streams waiting for the peer's stream credit.
    public var pendingGroupOpens: Int
    /// Request streams waiting for the peer's stream credit.
    public var pendingRequestOpens: Int

    public var description: String {
        "incoming \(incomingBufferedBytes) B (credit held \(incomingCreditHeldBytes) B), \(streamHandlers) streams, "
            + "served: \(servedSubscriptions) subscriptions \(servedTrackRequests) TRACK \(servedFetches) FETCH "
            + "\(servedAnnounces) announce \(servedProbes) probe streams; \(announcedBroadcasts) announced broadcasts, "
            + "\(ownSubscriptions) own subscriptions, \(pendingGroupOpens)+\(pendingRequestOpens) opens waiting for credit"
    }
}
