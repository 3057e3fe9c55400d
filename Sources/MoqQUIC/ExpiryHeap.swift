// SPDX-License-Identifier: MIT

/// The loop's connections ordered by when each must next run `handleExpiry` (an indexed binary
/// min-heap). Each connection caches its expiry here: the loop recomputes it only for connections
/// whose state changed (``QUICEventLoop/expiryMayChange(_:)``), so an iteration costs O(log n) per
/// changed connection instead of two `ngtcp2_conn_get_expiry` calls per connection (the fan-out
/// profile's O(connections) scan, run once per loop iteration).
///
/// Loop thread only.
struct ExpiryHeap {
    /// Where a connection sits, and the expiry it is ordered by.
    struct Slot {
        var index: Int
        var expiry: UInt64
    }

    private var items: [QUICConnection] = []

    /// The connection that expires first.
    var top: QUICConnection? { items.first }

    /// The earliest expiry (`.max` when empty).
    var earliest: UInt64 { items.first?.expirySlot?.expiry ?? .max }

    var count: Int { items.count }

    /// Inserts `connection`, or moves it to `expiry`.
    mutating func update(_ connection: QUICConnection, expiry: UInt64) {
        if let slot = connection.expirySlot {
            let old = slot.expiry
            connection.expirySlot?.expiry = expiry
            if expiry < old { up(slot.index) } else if expiry > old { down(slot.index) }
        } else {
            connection.expirySlot = Slot(index: items.count, expiry: expiry)
            items.append(connection)
            up(items.count - 1)
        }
    }

    /// Takes `connection` out (it left the loop).
    mutating func remove(_ connection: QUICConnection) {
        guard let slot = connection.expirySlot else { return }
        connection.expirySlot = nil
        let last = items.count - 1
        if slot.index != last {
            items[slot.index] = items[last]
            items[slot.index].expirySlot?.index = slot.index
        }
        items.removeLast()
        if slot.index < items.count {
            up(slot.index)
            down(slot.index)
        }
    }

    /// Every connection in the heap (order unspecified).
    var all: [QUICConnection] { items }

    private func key(_ i: Int) -> UInt64 { items[i].expirySlot?.expiry ?? .max }

    private mutating func swap(_ a: Int, _ b: Int) {
        items.swapAt(a, b)
        items[a].expirySlot?.index = a
        items[b].expirySlot?.index = b
    }

    private mutating func up(_ start: Int) {
        var i = start
        while i > 0 {
            let parent = (i - 1) / 2
            if key(i) >= key(parent) { break }
            swap(i, parent)
            i = parent
        }
    }

    private mutating func down(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var m = i
            if l < items.count && key(l) < key(m) { m = l }
            if r < items.count && key(r) < key(m) { m = r }
            if m == i { break }
            swap(i, m)
            i = m
        }
    }
}
