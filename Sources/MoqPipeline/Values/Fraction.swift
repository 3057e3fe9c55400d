// SPDX-License-Identifier: MIT

/// A GStreamer fraction (`GST_TYPE_FRACTION`), such as a frame rate: `Fraction(30, 1)` renders as `30/1`.
public struct Fraction: Sendable, Hashable, CustomStringConvertible {
    /// The numerator.
    public var numerator: Int32
    /// The denominator (GStreamer requires it to be non-zero).
    public var denominator: Int32

    /// A fraction `numerator/denominator`.
    public init(_ numerator: Int32, _ denominator: Int32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// `numerator/denominator`, as gst-launch and caps strings write it.
    public var description: String { "\(numerator)/\(denominator)" }
}
