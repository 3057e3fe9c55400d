// SPDX-License-Identifier: MIT

/// What a ``UDPProxy`` has done so far.
public struct ProxyStatistics: Sendable, Equatable {
    /// Datagrams forwarded from clients to the server (duplicates included).
    public var forwardedToServer = 0
    /// Datagrams forwarded from the server to clients (duplicates included).
    public var forwardedToClient = 0
    /// Datagrams from clients that were dropped, for any reason.
    public var droppedToServer = 0
    /// Datagrams from the server that were dropped, for any reason.
    public var droppedToClient = 0
    /// Of the drops, those a full rate-limit queue caused.
    public var queueDrops = 0
    /// Extra copies sent.
    public var duplicated = 0
    /// Datagrams held back so that later ones passed them.
    public var reordered = 0
    /// Datagrams that left before one that arrived earlier (from jitter or reordering).
    public var overtaken = 0
    /// Distinct client addresses seen.
    public var clients = 0
    /// Client flows forgotten after being idle (their upstream sockets closed).
    public var flowsExpired = 0
    /// NAT rebindings done (each gives every flow a new source port toward the server).
    public var rebinds = 0

    /// Everything dropped, both ways.
    public var dropped: Int { droppedToServer + droppedToClient }
    /// Everything forwarded, both ways.
    public var forwarded: Int { forwardedToServer + forwardedToClient }
}
