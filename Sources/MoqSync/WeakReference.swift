// SPDX-License-Identifier: MIT

/// A weak reference that `@Sendable` closures can capture: a timer, a callback or a task holds
/// it without keeping its target alive.
///
/// `@unchecked Sendable`: the reference itself is read and written atomically by the runtime;
/// whether the target may be used from the capturing thread is the target's business (loop-bound
/// objects are read only on their loop).
public final class WeakReference<T: AnyObject>: @unchecked Sendable {
    /// The target while it lives.
    public weak var value: T?

    /// A weak reference to `value`.
    public init(_ value: T) { self.value = value }
}
