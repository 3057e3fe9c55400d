// SPDX-License-Identifier: MIT
import MoqWire

/// Which of several routes to one broadcast a relay pulls from, as moq-relay chooses: the lowest
/// cost, then the fewest hops, then a fixed hash of the path and the hops (so that every node of
/// a cluster picks the same one between equals), then the newest.
struct RouteChoice {
    /// One route to compare: its hops and cost as seen here, and when it was learnt (larger: newer).
    struct Candidate: Equatable {
        var route: AnnounceRoute
        var serial: UInt64
    }

    /// FNV-1a, 64 bits, with moq-relay's seed: the path's bytes, then every hop id as 8 bytes
    /// little-endian.
    static func hash(path: String, hops: [UInt64]) -> UInt64 {
        var h: UInt64 = 0x420C_0DEC_B00B
        let prime: UInt64 = 0x0000_0100_0000_01B3
        for byte in path.utf8 {
            h ^= UInt64(byte)
            h = h &* prime
        }
        for hop in hops {
            var v = hop
            for _ in 0..<8 {
                h ^= v & 0xFF
                h = h &* prime
                v >>= 8
            }
        }
        return h
    }

    /// True when `a` is a better route than `b` for `path`.
    static func better(_ a: Candidate, than b: Candidate, path: String) -> Bool {
        if a.route.costWarm != b.route.costWarm { return a.route.costWarm < b.route.costWarm }
        if a.route.hops.count != b.route.hops.count { return a.route.hops.count < b.route.hops.count }
        let ha = hash(path: path, hops: a.route.hops)
        let hb = hash(path: path, hops: b.route.hops)
        if ha != hb { return ha < hb }
        return a.serial > b.serial
    }

    /// The index of the best of `candidates` (nil when empty).
    static func best(_ candidates: [Candidate], path: String) -> Int? {
        guard var best = candidates.indices.first else { return nil }
        for i in candidates.indices.dropFirst() where better(candidates[i], than: candidates[best], path: path) {
            best = i
        }
        return best
    }
}
