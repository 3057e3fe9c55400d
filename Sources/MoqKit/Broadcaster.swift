// SPDX-License-Identifier: MIT
import MoqSync

/// Fans values out to any number of `AsyncStream`s (each subscriber gets every value from
/// when it subscribed; a slow one keeps only the newest `buffer`, never stalling the others).
final class Broadcaster<Value: Sendable>: Sendable {
    private struct State {
        var continuations: [Int: AsyncStream<Value>.Continuation] = [:]
        var next = 0
        var finished = false
    }
    private let state = Lock(State())
    private let buffer: Int

    init(buffer: Int = 256) { self.buffer = buffer }

    func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(buffer))
        let id = state.withLock { s -> Int? in
            guard !s.finished else { return nil }
            let id = s.next
            s.next += 1
            s.continuations[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ value: Value) {
        for c in state.withLock({ Array($0.continuations.values) }) { c.yield(value) }
    }

    func finish() {
        let all = state.withLock { s -> [AsyncStream<Value>.Continuation] in
            s.finished = true
            defer { s.continuations = [:] }
            return Array(s.continuations.values)
        }
        for c in all { c.finish() }
    }
}
