// SPDX-License-Identifier: MIT
import SwiftMoQ

/// A benchmark frame: `seq` (u64 LE) and the publisher's `CLOCK_MONOTONIC` ns (u64 LE) at write time,
/// then filler up to the frame size. moqpeer.py's `bench-*` subcommands use the same layout.
enum StampedPayload {
    /// Bytes taken by the header.
    static let headerSize = 16

    /// A frame of `size` bytes (at least the header) for sequence `seq`, stamped now.
    static func make(seq: UInt64, size: Int) -> Bytes {
        let count = max(size, headerSize)
        let storage = FrameStorage(count: count)
        storage.base.initializeMemory(as: UInt8.self, repeating: 0x5a, count: count)
        storage.base.storeBytes(of: seq.littleEndian, toByteOffset: 0, as: UInt64.self)
        storage.base.storeBytes(of: Monotonic.now().littleEndian, toByteOffset: 8, as: UInt64.self)
        return Bytes(owner: storage, base: UnsafeRawPointer(storage.base), count: count)
    }

    /// `(seq, stamp ns)` of a received frame, or nil when it is too short to carry them.
    static func parse(_ payload: Bytes) -> (seq: UInt64, stamp: UInt64)? {
        guard payload.count >= headerSize else { return nil }
        return payload.withUnsafeBytes { raw in
            (
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }
}

/// The memory of one outgoing frame, freed when the last `Bytes` view of it (track cache, send buffers) goes.
/// `@unchecked Sendable`: written once before it is shared, immutable afterwards.
private final class FrameStorage: @unchecked Sendable {
    let base: UnsafeMutableRawPointer

    init(count: Int) { base = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16) }

    deinit { base.deallocate() }
}
