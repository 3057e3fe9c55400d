// SPDX-License-Identifier: MIT
import Foundation
package import SwiftMoQ
import Testing

/// A Rust relay (`moqpeer relay`) for one test, and ways to reach it.
package struct RustRelay {
    package let peer: RustPeer
    package let port: UInt16
    package let fingerprint: String

    package static func start(_ extra: [String] = []) async throws -> RustRelay {
        // SWIFTMOQ_RUST_DEBUG=1 makes the relay log every message (on its stderr).
        let debug = ProcessInfo.processInfo.environment["SWIFTMOQ_RUST_DEBUG"] == "1" ? ["--debug"] : []
        let (peer, port, fingerprint) = try await RustPeer.relay(debug + extra)
        return RustRelay(peer: peer, port: port, fingerprint: fingerprint)
    }

    package func url(_ path: String = "anon") -> String { "moql://127.0.0.1:\(port)/\(path)" }

    /// Arguments for a `moqpeer` client subcommand.
    package var client: [String] { RustPeer.clientArguments(port: port, fingerprint: fingerprint) }

    /// A Swift session pinned to the relay's certificate.
    package func connect(path: String = "anon") async throws -> MoqSession {
        try await MoqSession.connect(url(path), options: ClientOptions(tls: TLSOptions(fingerprint: fingerprint)))
    }

    /// Stops the relay without waiting for it to exit (see ``RustPeer/terminateInBackground(grace:)``).
    package func stop() {
        if ProcessInfo.processInfo.environment["SWIFTMOQ_RUST_DEBUG"] == "1" {
            _ = peer.terminate()
            try? peer.stderr.write(toFile: "/tmp/swiftmoq-relay-\(port).log", atomically: true, encoding: .utf8)
        } else {
            peer.terminateInBackground()
        }
    }

    /// Stops the relay and suspends until it has exited (its port is free again).
    package func stopAndWait() async {
        await peer.terminateAndWait()
        if ProcessInfo.processInfo.environment["SWIFTMOQ_RUST_DEBUG"] == "1" {
            try? peer.stderr.write(toFile: "/tmp/swiftmoq-relay-\(port).log", atomically: true, encoding: .utf8)
        }
    }
}

/// The payload `moqpeer publish --payload-size` writes: `g{group}f{frame}` repeated and cut.
package func rustPayload(group: Int, frame: Int, size: Int) -> [UInt8] {
    let tag = Array("g\(group)f\(frame)".utf8)
    return (0..<size).map { tag[$0 % tag.count] }
}

/// The `frame` events of a Rust subscriber that reads in arrival order (`moqpeer subscribe
/// --order arrival`) as `[group, index]` pairs, sorted by group; the sort is stable, so each
/// group's frames keep the order they arrived in. moq-lite sends the newest group first when a path
/// is busy (a loaded machine), and moq-ffi's sequence-order reader then skips the older group: a
/// test of "every frame arrives" reads in arrival order and compares this with the whole range.
package func framesByGroup(_ events: [PeerEvent]) -> [[Int]] {
    let pairs: [[Int]] = events.filter { $0.name == "frame" }.map { [$0.int("group") ?? -1, $0.int("index") ?? -1] }
    return pairs.enumerated().sorted { ($0.element[0], $0.offset) < ($1.element[0], $1.offset) }.map(\.element)
}

/// The `frame` events as they arrived, `group/index` each, for a failure's message.
package func arrivalOrder(_ events: [PeerEvent]) -> String {
    events.filter { $0.name == "frame" }.map { "\($0.int("group") ?? -1)/\($0.int("index") ?? -1)" }
        .joined(separator: " ")
}

/// Every frame of `groups`, `frames` per group, as ``framesByGroup(_:)`` lists them.
package func wholeGroups(_ groups: Range<Int>, frames: Int) -> [[Int]] {
    groups.flatMap { g in (0..<frames).map { [g, $0] } }
}

/// Reads every frame of a track until it ends, as (group, index, timestamp, payload).
package func readAll(_ consumer: TrackConsumer, limit: Int = .max, timeout: Duration = .seconds(30)) async throws
    -> [(UInt64, Int, UInt64, [UInt8])]
{
    try await withThrowingTaskGroup(of: [(UInt64, Int, UInt64, [UInt8])].self) { group in
        group.addTask {
            var out: [(UInt64, Int, UInt64, [UInt8])] = []
            outer: while let g = try await consumer.nextGroup() {
                var i = 0
                while let f = try await g.nextFrame() {
                    out.append((g.sequence, i, f.timestamp, f.payload.array))
                    i += 1
                    if out.count >= limit { break outer }
                }
            }
            return out
        }
        group.addTask {
            try await Task.sleep(for: timeout)
            consumer.cancel()
            throw CancellationError()
        }
        let result = try await group.next()!
        group.cancelAll()
        return result
    }
}

/// Resident memory of this process in bytes.
package func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return (Int(fields.count > 1 ? fields[1] : "0") ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}
