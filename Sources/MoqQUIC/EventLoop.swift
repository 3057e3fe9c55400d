// SPDX-License-Identifier: MIT
internal import CNgtcp2
internal import Glibc
// One thread per loop. It sleeps in epoll_wait until a socket is ready, the single timerfd expires
// (armed at the earliest of all scheduled timers and connection expiries), or the eventfd is
// written by `execute` from another thread. Every ngtcp2 call happens on this thread.
import MoqSync
import Synchronization

/// Something registered with the loop's epoll set. Loop thread only.
protocol LoopSource: AnyObject {
    func readable()
    func writable()
}

/// A thread that owns UDP sockets and every QUIC connection on them.
///
/// Thread rule: ``execute(_:)``, ``schedule(after:_:)``, ``isCurrentThread`` and ``shutdown()`` may be called
/// from any thread. Everything else in this module that touches a connection runs on the loop thread.
public final class QUICEventLoop: @unchecked Sendable {
    /// The name given at creation (also the thread's name, truncated to 15 bytes).
    public let name: String

    private let epfd: Int32
    private let wakefd: Int32
    private let timerfd: Int32
    private let inbox = Lock<Inbox>(Inbox())
    private let threadID = Atomic<UInt>(0)
    private var thread: pthread_t = 0
    private let joined = Lock<Bool>(false)

    private struct Inbox {
        var work: [@Sendable () -> Void] = []
        var stopped = false
    }

    // MARK: Loop-thread state
    private var sources: [Int32: any LoopSource] = [:]
    private var connections: [ObjectIdentifier: QUICConnection] = [:]
    private var dirty: [QUICConnection] = []
    /// Connections by expiry, and those whose expiry may have changed since it was cached.
    private var expiries = ExpiryHeap()
    private var staleExpiries: [QUICConnection] = []
    /// `runExpired`'s list of due connections, kept between iterations.
    private var dueExpiries: [QUICConnection] = []
    private var servers: [ObjectIdentifier: QUICServer] = [:]
    private var timers = TimerHeap()
    private var armedDeadline: UInt64 = .max
    private var stopping = false
    /// Fault injection for tests (loop thread only): when > 0, every n-th UDP send on this loop reports
    /// EAGAIN without sending, which exercises the parked-packet / EPOLLOUT path that loopback never hits.
    var debugWouldBlockEvery = 0
    /// Fault injection for tests (loop thread only): sockets created from now on behave as if the kernel
    /// refused segmentation offload, so every packet is its own send call.
    var debugNoSegmentation = false
    #if DEBUG
        /// SWIFTMOQ_CHECK_EXPIRIES=1: every iteration checks that no cached expiry is later than ngtcp2's.
        private let checkExpiries = getenv("SWIFTMOQ_CHECK_EXPIRIES") != nil
    #endif

    /// Creates the loop and starts its thread. The thread keeps the loop alive until ``shutdown()``: call it.
    /// - Throws: `QUICError.system` naming `epoll_create1`, `eventfd`, `timerfd_create`, `epoll_ctl` or `pthread_create`.
    public init(name: String = "moq-quic") throws(QUICError) {
        self.name = name
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        if ep < 0 { throw Sys.errnoError("epoll_create1") }
        let wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        if wake < 0 {
            let e = Sys.errnoError("eventfd")
            close(ep)
            throw e
        }
        let tfd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        if tfd < 0 {
            let e = Sys.errnoError("timerfd_create")
            close(ep)
            close(wake)
            throw e
        }
        epfd = ep
        wakefd = wake
        timerfd = tfd
        do {
            try epollControl(EPOLL_CTL_ADD, wake, EPOLLIN.rawValue)
            try epollControl(EPOLL_CTL_ADD, tfd, EPOLLIN.rawValue)
        } catch {
            close(ep)
            close(wake)
            close(tfd)
            throw error
        }
        let box = Unmanaged.passRetained(self).toOpaque()
        var tid: pthread_t = 0
        let rc = pthread_create(
            &tid, nil,
            { arg in
                let loop = Unmanaged<QUICEventLoop>.fromOpaque(arg!).takeRetainedValue()
                loop.run()
                return nil
            }, box)
        if rc != 0 {
            Unmanaged<QUICEventLoop>.fromOpaque(box).release()
            close(ep)
            close(wake)
            close(tfd)
            throw Sys.errnoError("pthread_create", rc)
        }
        thread = tid
    }

    deinit {
        // The thread holds a strong reference while it runs, so it has ended by now.
        if !joined.withLock({ $0 }) { pthread_detach(thread) }
        close(epfd)
        close(wakefd)
        close(timerfd)
    }

    /// Work handed to the loop (``execute(_:)``) and not run yet: how far behind it is.
    public var pendingWork: Int { inbox.withLock { $0.work.count } }

    /// CPU time the loop's thread has used (nil once it ended, or if the system cannot tell).
    public var cpuTime: Duration? {
        guard threadID.load(ordering: .acquiring) != 0 else { return nil }
        // Under the join's lock: the thread id stays valid until it is joined.
        return joined.withLock { done -> Duration? in
            guard !done else { return nil }
            var clock = clockid_t()
            guard pthread_getcpuclockid(thread, &clock) == 0 else { return nil }
            var ts = timespec()
            guard clock_gettime(clock, &ts) == 0 else { return nil }
            return .seconds(Int64(ts.tv_sec)) + .nanoseconds(Int64(ts.tv_nsec))
        }
    }

    /// True when called on this loop's thread.
    public var isCurrentThread: Bool {
        threadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Runs `work` on the loop thread, in FIFO order with other `execute` calls. Dropped after ``shutdown()``
    /// (so nothing, not even a connection's `didCloseWith`, is delivered for work handed over after that).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty: Bool? = inbox.withLock { inbox in
            if inbox.stopped { return nil }
            inbox.work.append(work)
            return inbox.work.count == 1
        }
        if wasEmpty == true { wake() }
    }

    /// Runs `work` once on the loop thread after `after` has passed, unless the returned timer is cancelled first.
    @discardableResult
    public func schedule(after: Duration, _ work: @escaping @Sendable () -> Void) -> QUICTimer {
        let timer = QUICTimer(deadline: Sys.now() &+ after.nanoseconds, work: work)
        if isCurrentThread {
            timers.push(timer)
        } else {
            execute { [self] in timers.push(timer) }
        }
        return timer
    }

    /// Closes every connection and socket, stops the thread and waits for it to end (unless called on the
    /// loop thread itself, which cannot wait for itself). Idempotent.
    public func shutdown() {
        if isCurrentThread {
            stopNow()
            return
        }
        let alreadyStopped = inbox.withLock { inbox -> Bool in
            let was = inbox.stopped
            if !was { inbox.work.append { [self] in stopNow() } }
            return was
        }
        if !alreadyStopped { wake() }
        joined.withLock { done in
            if !done {
                pthread_join(thread, nil)
                done = true
            }
        }
    }

    // MARK: - Loop-thread API used by the rest of the module

    func assertOnLoop(_ function: StaticString = #function) {
        assert(isCurrentThread, "\(function) must be called on the loop thread of \(name)")
    }

    func register(_ fd: Int32, _ source: any LoopSource) throws(QUICError) {
        assertOnLoop()
        try epollControl(EPOLL_CTL_ADD, fd, EPOLLIN.rawValue)
        sources[fd] = source
    }

    func setWriteInterest(_ fd: Int32, _ on: Bool) {
        assertOnLoop()
        try? epollControl(EPOLL_CTL_MOD, fd, EPOLLIN.rawValue | (on ? EPOLLOUT.rawValue : 0))
    }

    func unregister(_ fd: Int32) {
        assertOnLoop()
        if sources.removeValue(forKey: fd) != nil {
            _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, nil)
        }
    }

    func add(_ connection: QUICConnection) {
        assertOnLoop()
        connections[ObjectIdentifier(connection)] = connection
        expiries.update(connection, expiry: connection.expiry)
    }

    func remove(_ connection: QUICConnection) {
        connections.removeValue(forKey: ObjectIdentifier(connection))
        expiries.remove(connection)
    }

    /// The connection's ngtcp2 state, phase or write blocking changed: its expiry is recomputed
    /// before the loop next looks at expiries. Every path into ngtcp2 marks the connection dirty,
    /// which calls this.
    func expiryMayChange(_ connection: QUICConnection) {
        if !connection.expiryStale {
            connection.expiryStale = true
            staleExpiries.append(connection)
        }
    }

    private func refreshStaleExpiries() {
        guard !staleExpiries.isEmpty else { return }
        for connection in staleExpiries {
            connection.expiryStale = false
            guard connection.expirySlot != nil else { continue }
            // Parked on a full socket (another connection's EAGAIN, when the server's socket is
            // shared): its expiry is `.max` until the socket's writability marks it dirty, hence stale,
            // again. (Packets pending on a socket that is writable again are flushed anyway: waiting
            // for writability then would block the socket for nothing.)
            if let socket = connection.socket, socket.isWriteBlocked { socket.waitForWritable(connection) }
            expiries.update(connection, expiry: connection.expiry)
        }
        staleExpiries.removeAll(keepingCapacity: true)
    }

    func add(_ server: QUICServer) { servers[ObjectIdentifier(server)] = server }
    func remove(_ server: QUICServer) { servers.removeValue(forKey: ObjectIdentifier(server)) }

    /// Asks for `connection.flush()` before the loop sleeps again.
    func markDirty(_ connection: QUICConnection) {
        expiryMayChange(connection)
        if !connection.isDirty {
            connection.isDirty = true
            dirty.append(connection)
        }
    }

    var isStopping: Bool { stopping }

    // MARK: - The loop

    private func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        moq_set_thread_name(String(decoding: name.utf8.prefix(15), as: UTF8.self))
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            runExpired()
            flushDirty()
            if stopping { break }
            arm(nextDeadline())
            // Connections still dirty after `flushDirty`'s rounds: look at the sockets and go on at once.
            let timeout: Int32 = dirty.isEmpty ? -1 : 0
            let n = events.withUnsafeMutableBufferPointer { epoll_wait(epfd, $0.baseAddress, 64, timeout) }
            if n < 0 {
                if errno == EINTR { continue }
                fatalError("epoll_wait failed: \(Sys.errnoText(errno))")
            }
            for i in 0..<Int(n) {
                let ev = events[i]
                let fd = ev.data.fd
                if fd == wakefd {
                    var counter: UInt64 = 0
                    _ = read(wakefd, &counter, 8)
                    drainInbox()
                } else if fd == timerfd {
                    var expirations: UInt64 = 0
                    _ = read(timerfd, &expirations, 8)
                    armedDeadline = .max
                } else if let source = sources[fd] {
                    if ev.events & (EPOLLOUT.rawValue) != 0 { source.writable() }
                    if ev.events & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0, sources[fd] != nil {
                        source.readable()
                    }
                }
            }
        }
        // Drain anything queued after the stop so closures (and what they capture) are released here.
        inbox.withLock {
            $0.stopped = true; $0.work.removeAll()
        }
        sources.removeAll()
        connections.removeAll()
        servers.removeAll()
        dirty.removeAll()
        for connection in expiries.all { connection.expirySlot = nil }
        expiries = ExpiryHeap()
        staleExpiries.removeAll()
        dueExpiries.removeAll()
        timers = TimerHeap()
    }

    private func drainInbox() {
        let work = inbox.withLock { inbox -> [@Sendable () -> Void] in
            let w = inbox.work
            inbox.work.removeAll(keepingCapacity: true)
            return w
        }
        for item in work { item() }
    }

    private func runExpired() {
        let now = Sys.now()
        while let top = timers.top, top.deadline <= now {
            timers.pop()
            if let work = top.take() { work() }
        }
        refreshStaleExpiries()
        // Taken out first: a connection whose expiry stays in the past is handled once per iteration.
        var due = dueExpiries
        dueExpiries = []
        defer {
            due.removeAll(keepingCapacity: true)
            dueExpiries = due
        }
        while let top = expiries.top, expiries.earliest <= now {
            due.append(top)
            expiries.update(top, expiry: .max)
        }
        for connection in due {
            if connection.expiry <= now { connection.handleExpiry(now) }
            expiryMayChange(connection)
        }
    }

    private func flushDirty() {
        // A flush may dirty other connections (e.g. a delegate writing to another connection): repeat.
        var rounds = 0
        while !dirty.isEmpty && rounds < 8 {
            let batch = dirty
            dirty.removeAll(keepingCapacity: true)
            for connection in batch {
                connection.isDirty = false
                connection.flush()
                expiryMayChange(connection)
            }
            rounds += 1
        }
    }

    private func nextDeadline() -> UInt64 {
        refreshStaleExpiries()
        #if DEBUG
            if checkExpiries {
                // Later than ngtcp2's would be a timer firing late. (Earlier is harmless: another
                // connection's EAGAIN on a shared server socket parks this one, whose expiry turns `.max`
                // until its cached one comes due and registers it to wait for the socket.)
                for connection in connections.values {
                    assert((connection.expirySlot?.expiry ?? .max) <= connection.expiry, "stale expiry cached")
                }
            }
        #endif
        return min(timers.top?.deadline ?? .max, expiries.earliest)
    }

    /// Sets the timer to fire by `deadline`. Reprogramming a timer is a costly system call (on a
    /// virtual machine each is an exit to the hypervisor: 9 % of the relay's CPU at 400 viewers, when it
    /// was reprogrammed at every pass, issue #24), and most passes move the earliest deadline later
    /// (an ACK pushes a connection's loss timer on). A timer that fires before it is needed costs one
    /// idle pass of the loop, which re-arms it; so it is moved only earlier, or when nothing is armed.
    private func arm(_ deadline: UInt64) {
        if deadline >= armedDeadline { return }
        armedDeadline = deadline
        var spec = itimerspec()
        if deadline != .max {
            // 0 would disarm the timer; an already-passed absolute time fires at once.
            let d = max(deadline, 1)
            spec.it_value.tv_sec = Int(d / 1_000_000_000)
            spec.it_value.tv_nsec = Int(d % 1_000_000_000)
        }
        _ = timerfd_settime(timerfd, Int32(TFD_TIMER_ABSTIME), &spec, nil)
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakefd, &one, 8)
    }

    private func stopNow() {
        inbox.withLock { $0.stopped = true }
        stopping = true
        for server in Array(servers.values) { server.closeNow() }
        for connection in Array(connections.values) { connection.abortForShutdown() }
    }

    private func epollControl(_ op: Int32, _ fd: Int32, _ events: UInt32) throws(QUICError) {
        var ev = epoll_event()
        ev.events = events
        ev.data.fd = fd
        if epoll_ctl(epfd, op, fd, &ev) != 0 { throw Sys.errnoError("epoll_ctl") }
    }
}

/// A one-shot timer created by ``QUICEventLoop/schedule(after:_:)``.
public final class QUICTimer: @unchecked Sendable {
    let deadline: UInt64
    let sequence: UInt64
    private let state: Lock<(@Sendable () -> Void)?>
    private static let counter = Atomic<UInt64>(0)

    init(deadline: UInt64, work: @escaping @Sendable () -> Void) {
        self.deadline = deadline
        self.sequence = QUICTimer.counter.add(1, ordering: .relaxed).newValue
        self.state = Lock(work)
    }

    /// Prevents the work from running if it has not started yet. Safe from any thread; idempotent.
    public func cancel() {
        _ = state.withLock { w -> (@Sendable () -> Void)? in
            let old = w
            w = nil
            return old
        }
    }

    func take() -> (@Sendable () -> Void)? {
        state.withLock { w in
            let old = w
            w = nil
            return old
        }
    }
}

/// A binary min-heap of timers ordered by (deadline, creation order).
struct TimerHeap {
    private var items: [QUICTimer] = []

    var top: QUICTimer? { items.first }

    private static func less(_ a: QUICTimer, _ b: QUICTimer) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    mutating func push(_ timer: QUICTimer) {
        items.append(timer)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if !Self.less(items[i], items[parent]) { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count && Self.less(items[l], items[m]) { m = l }
            if r < items.count && Self.less(items[r], items[m]) { m = r }
            if m == i { break }
            items.swapAt(i, m)
            i = m
        }
    }
}
