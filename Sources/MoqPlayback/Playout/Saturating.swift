// SPDX-License-Identifier: MIT

/// Arithmetic on publisher timestamps, which are whatever a peer sent (any varint, up to
/// 2^62 − 1 µs): it saturates instead of trapping or wrapping, so a hostile or broken
/// publisher can at worst produce a timeline pinned at the end of time, never a crash.
enum Saturating {
    /// µs → ns, saturating at `Int64.max`.
    static func nanoseconds(micros: UInt64) -> Int64 {
        let (ns, overflow) = micros.multipliedReportingOverflow(by: 1000)
        return overflow ? .max : int64(ns)
    }

    /// µs → ns, saturating at `Int64.max` (so that it also fits a signed offset).
    static func nanosecondsUnsigned(micros: UInt64) -> UInt64 { UInt64(nanoseconds(micros: micros)) }

    /// The value, saturating at `Int64.max`.
    static func int64(_ value: UInt64) -> Int64 { Int64(clamping: value) }

    /// A non-negative value as unsigned (negative: 0).
    static func unsigned(_ value: Int64) -> UInt64 { value < 0 ? 0 : UInt64(value) }

    static func add(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }

    static func subtract(_ a: Int64, _ b: Int64) -> Int64 {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : difference
    }

    static func add(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }

    /// `a − b`, or 0 when `b` is larger.
    static func minus(_ a: UInt64, _ b: UInt64) -> UInt64 { a > b ? a - b : 0 }
}
