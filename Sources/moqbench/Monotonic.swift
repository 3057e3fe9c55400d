// SPDX-License-Identifier: MIT
import Foundation

/// `CLOCK_MONOTONIC`, the clock every role stamps with (Python's `time.monotonic_ns()` reads the same one,
/// and so does GStreamer's system clock).
enum Monotonic {
    /// Now, in ns.
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Blocks the calling thread until `deadline` (ns); returns at once when it has passed.
    static func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// CPU time (user + system) this process has used, in s.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// This process's resident set size in KiB (`VmRSS` of /proc/self/status), or -1.
    static func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return -1 }
        return line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? -1
    }
}

/// Runs blocking work on a thread of its own (never on the cooperative pool) and returns its result.
func onDedicatedThread<T: Sendable>(name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.name = name
        thread.start()
    }
}

/// Waits until `path` exists (the orchestrator's start signal); returns at once for nil.
func waitForGoFile(_ path: String?) async {
    guard let path else { return }
    while access(path, F_OK) != 0 { try? await Task.sleep(for: .milliseconds(5)) }
}
