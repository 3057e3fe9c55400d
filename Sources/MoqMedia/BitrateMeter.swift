// SPDX-License-Identifier: MIT

/// A track's bitrate for the catalog when the encoder did not say it: the largest of whole
/// one-second windows of payload (running time), as moq-dev's importer measures it. ``observe``
/// says when the catalog should change: at the first whole window, then only when the maximum
/// grew by a tenth, so that a steady track does not rewrite the catalog every second.
public struct BitrateMeter: Sendable, Equatable {
    public static let windowNs: UInt64 = 1_000_000_000
    private var window: UInt64?
    private var bytes: UInt64 = 0
    private var maxBps: UInt64 = 0
    /// What was last given for the catalog (bit/s).
    public private(set) var published: UInt64?

    public init() {}

    /// `size` payload bytes at running time `runningNs`: the bitrate to publish now, if it changed.
    public mutating func observe(size: Int, atNs runningNs: UInt64) -> UInt64? {
        let index = runningNs / Self.windowNs
        var result: UInt64?
        if let current = window, index != current {
            // Only a window followed by the next counts as whole (not one before a gap).
            if index == current + 1 {
                let bps = bytes.multipliedReportingOverflow(by: 8).partialValue
                maxBps = max(maxBps, bps)
                if let published {
                    if maxBps > published + published / 10 { result = maxBps }
                } else if maxBps > 0 {
                    result = maxBps
                }
                if let result { self.published = result }
            }
            bytes = 0
        }
        window = index
        bytes &+= UInt64(max(0, size))
        return result
    }
}
