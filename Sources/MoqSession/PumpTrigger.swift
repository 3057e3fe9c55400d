// SPDX-License-Identifier: MIT
import Synchronization

/// Something on the session thread that re-reads its track when it changes.
protocol Pumpable: AnyObject {
    func pump()
}

/// Turns track notifications (any thread) into one coalesced `pump()` on the
/// session thread: however many frames arrive before the session thread runs,
/// the target is pumped once.
final class PumpTrigger: TrackObserver, @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private let scheduler: any SessionScheduler
    /// Read and written only on the session thread.
    private weak var target: (any Pumpable)?

    init(scheduler: any SessionScheduler, target: any Pumpable) {
        self.scheduler = scheduler
        self.target = target
    }

    func trackDidChange() {
        guard !flag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        scheduler.execute { [self] in
            flag.store(false, ordering: .releasing)
            target?.pump()
        }
    }
}
