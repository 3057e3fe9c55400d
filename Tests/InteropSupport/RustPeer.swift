// SPDX-License-Identifier: MIT
package import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One run of `Tests/Interop/moqpeer.py`: moq-dev's own Rust moq-lite implementation
/// (PyPI `moq-rs` over `moq-ffi`), driven as a child process by the interop tests.
///
/// The tool prints one JSON event per line on stdout (`{"event": "frame", ...}`) and logs on
/// stderr. Background threads read both pipes as the bytes arrive; tests consume the events
/// in order with ``next(timeout:)`` / ``waitFor(event:timeout:)``, which exist both as
/// blocking calls and as `async` overloads that suspend instead of holding a thread of the
/// cooperative pool (a test on 2 cores must not starve the Swift code it exercises).
///
/// The child is stopped by ``terminate(grace:)`` — SIGTERM, then SIGKILL after the grace
/// period — by `deinit`, and, in suites with the ``PeersStopped`` trait (`.peersStopped`), awaited
/// before the test that launched it returns. Its stdin is a pipe this object holds open, so the child also
/// stops by itself when the test process dies.
///
/// ```swift
/// let (relay, port, fingerprint) = try RustPeer.relay()
/// let client = RustPeer.clientArguments(port: port, fingerprint: fingerprint)
/// let sub = try RustPeer.launch(["subscribe"] + client + ["--broadcast", name])
/// let frame = try await sub.waitFor(event: "frame", timeout: .seconds(10))
/// ```
package final class RustPeer: @unchecked Sendable {  // mutable state lives in `PeerState`, behind its lock
    /// The subcommand and its arguments, for failure messages.
    package let arguments: [String]
    /// The child's process id.
    package let pid: Int32

    private let process: Process
    private let state: PeerState
    private let stdinPipe: Pipe

    // MARK: Launching

    /// Starts `moqpeer.py` (or another script of `Tests/Interop`) with `arguments` (the subcommand first).
    ///
    /// - Parameters:
    ///   - script: the script in `Tests/Interop` (they all speak the same JSON-lines protocol).
    ///   - python: the interpreter; defaults to `SWIFTMOQ_PYTHON` or `<root>/.venv/bin/python`.
    ///   - file: locates the package root (the nearest ancestor holding `Package.swift`).
    /// - Throws: ``RustPeerError/setupMissing(_:)`` when the virtualenv or the tool is absent.
    package static func launch(
        _ arguments: [String], script name: String = "moqpeer.py", python: String? = nil, file: String = #filePath
    ) throws -> RustPeer {
        let root = try packageRoot(from: file)
        let interpreter =
            python ?? ProcessInfo.processInfo.environment["SWIFTMOQ_PYTHON"]
            ?? root.appendingPathComponent(".venv/bin/python").path
        let script = root.appendingPathComponent("Tests/Interop/\(name)").path
        guard FileManager.default.isExecutableFile(atPath: interpreter) else {
            throw RustPeerError.setupMissing(
                "no Python virtualenv at \(interpreter): run `make setup` to install the Rust peer (moq-rs)")
        }
        guard FileManager.default.fileExists(atPath: script) else {
            throw RustPeerError.setupMissing("\(script) is missing")
        }
        let peer = try RustPeer(python: interpreter, script: script, arguments: arguments)
        PeerScope.current?.add(peer)
        return peer
    }

    /// Starts `moqpeer relay` (a `moq.Server` relaying through one shared origin) and waits
    /// until it listens.
    package static func relay(
        _ extra: [String] = [], timeout: Duration = .seconds(20), file: String = #filePath
    ) throws -> (peer: RustPeer, port: UInt16, fingerprint: String) {
        let peer = try launch(["relay"] + extra, file: file)
        let listening = try peer.waitFor(event: "listening", timeout: timeout)
        guard let port = listening.int("port").flatMap({ UInt16(exactly: $0) }),
            let fingerprint = listening.string("fingerprint")
        else {
            throw RustPeerError.malformed(line: listening.line, stderr: peer.stderr)
        }
        return (peer, port, fingerprint)
    }

    /// Starts `moqpeer relay` and waits until it listens, suspending instead of blocking.
    package static func relay(
        _ extra: [String] = [], timeout: Duration = .seconds(20), file: String = #filePath
    ) async throws -> (peer: RustPeer, port: UInt16, fingerprint: String) {
        let peer = try launch(["relay"] + extra, file: file)
        let listening = try await peer.waitFor(event: "listening", timeout: timeout)
        guard let port = listening.int("port").flatMap({ UInt16(exactly: $0) }),
            let fingerprint = listening.string("fingerprint")
        else {
            throw RustPeerError.malformed(line: listening.line, stderr: peer.stderr)
        }
        return (peer, port, fingerprint)
    }

    /// `--url moql://127.0.0.1:<port>/<path> --fingerprint <hex>`: the connection arguments
    /// of every client subcommand.
    package static func clientArguments(
        port: UInt16, fingerprint: String, host: String = "127.0.0.1", path: String = "anon"
    ) -> [String] {
        ["--url", "moql://\(host):\(port)/\(path)", "--fingerprint", fingerprint]
    }

    /// A broadcast name no other test (or earlier run) uses: reusing a name while an old
    /// session lingers breaks subscribes on the Rust side.
    package static func uniqueName(_ prefix: String) -> String {
        "\(prefix)-\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// The directory holding `Package.swift`, searched upwards from `file`.
    package static func packageRoot(from file: String = #filePath) throws -> URL {
        var directory = URL(fileURLWithPath: file).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                return directory
            }
            directory = directory.deletingLastPathComponent()
        }
        throw RustPeerError.setupMissing("no Package.swift above \(file)")
    }

    private init(python: String, script: String, arguments: [String]) throws {
        self.arguments = arguments
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONUNBUFFERED"] = "1"
        environment["NO_COLOR"] = "1"
        process.environment = environment

        let stdout = Pipe()
        let stderr = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin

        let state = PeerState(description: "moqpeer \(arguments.joined(separator: " "))")
        process.terminationHandler = { process in
            state.processExited(status: process.terminationStatus)
        }
        do {
            try process.run()
        } catch {
            throw RustPeerError.launchFailed("cannot start \(python) \(script): \(error)")
        }
        // The child owns its ends now; keeping ours open would hide EOF from the readers.
        try? stdout.fileHandleForWriting.close()
        try? stderr.fileHandleForWriting.close()
        try? stdin.fileHandleForReading.close()

        self.process = process
        self.state = state
        self.stdinPipe = stdin
        self.pid = process.processIdentifier
        state.startReading(stdout: stdout.fileHandleForReading, stderr: stderr.fileHandleForReading)
    }

    deinit {
        terminate(grace: .seconds(3))
    }

    // MARK: Events

    /// Everything the child wrote on stderr so far (its log and the Rust log).
    package var stderr: String { state.stderrText }

    /// Every event received so far, consumed or not.
    package var history: [PeerEvent] { state.history }

    /// The child's exit status, once it has exited.
    package var exitStatus: Int32? { state.exitStatus }

    /// The next event, blocking the calling thread up to `timeout`.
    ///
    /// - Throws: ``RustPeerError/timeout(waitingFor:after:context:)`` or
    ///   ``RustPeerError/exited(status:waitingFor:context:)`` once the child is gone.
    package func next(timeout: Duration) throws -> PeerEvent {
        try state.nextBlocking(timeout: timeout, purpose: "the next event")
    }

    /// The next event; suspends (without blocking a thread) up to `timeout`.
    package func next(timeout: Duration) async throws -> PeerEvent {
        try await state.nextSuspending(timeout: timeout, purpose: "the next event")
    }

    /// Consumes events until one named `event` arrives and returns it.
    ///
    /// An `{"event":"error"}` from the child ends the wait with
    /// ``RustPeerError/peerFailed(message:context:)`` (unless `event` is `"error"`).
    @discardableResult
    package func waitFor(event: String, timeout: Duration) throws -> PeerEvent {
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = max(deadline - ContinuousClock.now, .zero)
            let next = try state.nextBlocking(timeout: remaining, purpose: "event '\(event)'")
            if let match = try check(next, against: event) { return match }
        }
    }

    /// Consumes events until one named `event` arrives; suspends instead of blocking.
    @discardableResult
    package func waitFor(event: String, timeout: Duration) async throws -> PeerEvent {
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = max(deadline - ContinuousClock.now, .zero)
            let next = try await state.nextSuspending(timeout: remaining, purpose: "event '\(event)'")
            if let match = try check(next, against: event) { return match }
        }
    }

    /// Consumes events up to and including `event`, returning all of them.
    package func collect(until event: String, timeout: Duration) async throws -> [PeerEvent] {
        let deadline = ContinuousClock.now + timeout
        var events: [PeerEvent] = []
        while true {
            let remaining = max(deadline - ContinuousClock.now, .zero)
            let next = try await state.nextSuspending(timeout: remaining, purpose: "event '\(event)'")
            events.append(next)
            if try check(next, against: event) != nil { return events }
        }
    }

    private func check(_ candidate: PeerEvent, against event: String) throws -> PeerEvent? {
        if candidate.name == event { return candidate }
        if candidate.name == "error" {
            throw RustPeerError.peerFailed(
                message: candidate.string("message") ?? candidate.line, context: state.context())
        }
        return nil
    }

    /// Waits until the child exits by itself and returns its status.
    @discardableResult
    package func waitForExit(timeout: Duration) throws -> Int32 {
        try state.waitForExit(timeout: timeout, purpose: "exit")
    }

    /// Waits until the child exits by itself; suspends instead of blocking.
    @discardableResult
    package func waitForExit(timeout: Duration) async throws -> Int32 {
        try await state.waitForExitSuspending(timeout: timeout)
    }

    // MARK: Stopping

    /// Stops the child like ``terminate(grace:)`` but returns at once: SIGTERM now, SIGKILL from a
    /// background thread if it is still running after `grace`. For `defer` blocks of async tests:
    /// `terminate` blocks its thread until the child exits, and a blocked thread of Swift's
    /// cooperative pool (two on a 2-core machine) stalls every other test's tasks in the process.
    package func terminateInBackground(grace: Duration = .seconds(3)) {
        try? stdinPipe.fileHandleForWriting.close()
        guard state.exitStatus == nil else { return }
        if process.isRunning { kill(pid, SIGTERM) }
        Thread.detachNewThread { [self] in _ = terminate(grace: grace) }
    }

    /// Stops the child like ``terminate(grace:)``, suspending instead of blocking while it exits.
    @discardableResult
    package func terminateAndWait(grace: Duration = .seconds(3)) async -> Int32 {
        defer { try? stdinPipe.fileHandleForWriting.close() }
        if let status = state.exitStatus { return status }
        if process.isRunning { kill(pid, SIGTERM) }
        if let status = try? await state.waitForExitSuspending(timeout: grace) { return status }
        if process.isRunning { kill(pid, SIGKILL) }
        return (try? await state.waitForExitSuspending(timeout: .seconds(10))) ?? -1
    }

    /// Stops the child: SIGTERM (moqpeer then closes its session cleanly and exits 0), then
    /// SIGKILL if it is still running after `grace`. Returns the exit status (the signal
    /// number if a signal ended it, e.g. 9 after SIGKILL). Idempotent.
    @discardableResult
    package func terminate(grace: Duration = .seconds(3)) -> Int32 {
        defer { try? stdinPipe.fileHandleForWriting.close() }
        if let status = state.exitStatus { return status }
        // `isRunning` is false once Foundation has reaped the child: never signal a pid
        // that may have been reused.
        if process.isRunning { kill(pid, SIGTERM) }
        if let status = try? state.waitForExit(timeout: grace, purpose: "exit after SIGTERM") {
            return status
        }
        if process.isRunning { kill(pid, SIGKILL) }
        return (try? state.waitForExit(timeout: .seconds(10), purpose: "exit after SIGKILL")) ?? -1
    }
}

// MARK: - Events

/// One line of moqpeer output: `{"event": name, ...fields}`.
package struct PeerEvent: Sendable, CustomStringConvertible {
    /// The raw JSON line.
    package let line: String
    /// The `event` field (`"<unparsed>"` for a line that is not a JSON object).
    package let name: String
    package let fields: [String: JSONValue]

    package init(line: String) {
        self.line = line
        let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(line.utf8))
        fields = object ?? [:]
        if case .string(let event)? = fields["event"] {
            name = event
        } else {
            name = "<unparsed>"
        }
    }

    package subscript(key: String) -> JSONValue? { fields[key] }

    package func int(_ key: String) -> Int? {
        switch fields[key] {
        case .int(let value)?: Int(exactly: value)
        case .double(let value)?: Int(exactly: value)
        default: nil
        }
    }

    package func string(_ key: String) -> String? {
        if case .string(let value)? = fields[key] { value } else { nil }
    }

    /// An array of integers (e.g. the groups of a subscriber's summary).
    package func array(_ key: String) -> [Int]? {
        guard case .array(let values)? = fields[key] else { return nil }
        return values.compactMap { value -> Int? in
            if case .int(let i) = value { return Int(exactly: i) }
            return nil
        }
    }

    package func bool(_ key: String) -> Bool? {
        if case .bool(let value)? = fields[key] { value } else { nil }
    }

    /// A base64 field (frame and datagram payloads) decoded.
    package func bytes(_ key: String) -> [UInt8]? {
        string(key).flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
    }

    /// The event as Foundation objects, for ad-hoc inspection.
    package var dictionary: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }

    package var description: String { line }
}

/// A JSON value; integers stay exact (hop ids need 53 bits).
package enum JSONValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

// MARK: - Errors

package enum RustPeerError: Error, CustomStringConvertible {
    /// The virtualenv (or the tool) is missing; the message says to run `make setup`.
    case setupMissing(String)
    case launchFailed(String)
    case timeout(waitingFor: String, after: Duration, context: String)
    case exited(status: Int32, waitingFor: String, context: String)
    /// The child printed `{"event":"error","message":...}`.
    case peerFailed(message: String, context: String)
    case malformed(line: String, stderr: String)

    package var description: String {
        switch self {
        case .setupMissing(let message), .launchFailed(let message):
            message
        case .timeout(let what, let after, let context):
            "timed out after \(after) waiting for \(what)\n\(context)"
        case .exited(let status, let what, let context):
            "peer exited with status \(status) while waiting for \(what)\n\(context)"
        case .peerFailed(let message, let context):
            "peer failed: \(message)\n\(context)"
        case .malformed(let line, let stderr):
            "malformed peer event: \(line)\nstderr:\n\(stderr)"
        }
    }
}

// MARK: - Shared state

/// The state the reader threads and the test share. Every field is guarded by `condition`.
/// The readers hold this object, not the `RustPeer`, so dropping the peer runs its `deinit`.
private final class PeerState: @unchecked Sendable {
    private typealias Waiter = CheckedContinuation<PeerEvent, any Error>

    private let condition = NSCondition()
    private let label: String
    private var buffered: [PeerEvent] = []
    private var allEvents: [PeerEvent] = []
    private var stderrData = Data()
    private var stdoutClosed = false
    private var stderrClosed = false
    private var status: Int32?
    private var waiters: [(id: UInt64, continuation: Waiter)] = []
    private var exitWaiters: [(id: UInt64, continuation: CheckedContinuation<Int32, any Error>)] = []
    private var cancelled: Set<UInt64> = []
    private var nextWaiterID: UInt64 = 0

    init(description: String) {
        label = description
    }

    // MARK: Readers

    func startReading(stdout: FileHandle, stderr: FileHandle) {
        let out = Thread { [self] in readLines(stdout) }
        out.name = "moqpeer stdout"
        out.start()
        let err = Thread { [self] in readStderr(stderr) }
        err.name = "moqpeer stderr"
        err.start()
    }

    private func readLines(_ handle: FileHandle) {
        var pending = Data()
        while let chunk = read(handle) {
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                if !line.isEmpty { deliver(PeerEvent(line: line)) }
            }
        }
        if !pending.isEmpty { deliver(PeerEvent(line: String(decoding: pending, as: UTF8.self))) }
        update { $0.stdoutClosed = true }
    }

    private func readStderr(_ handle: FileHandle) {
        while let chunk = read(handle) {
            update { $0.stderrData.append(chunk) }
        }
        update { $0.stderrClosed = true }
    }

    /// One blocking read(2); nil at EOF.
    private func read(_ handle: FileHandle) -> Data? {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes {
                #if canImport(Glibc)
                    Glibc.read(handle.fileDescriptor, $0.baseAddress, $0.count)
                #else
                    Darwin.read(handle.fileDescriptor, $0.baseAddress, $0.count)
                #endif
            }
            if count > 0 { return Data(buffer[0..<count]) }
            if count < 0 && errno == EINTR { continue }
            return nil
        }
    }

    private func deliver(_ event: PeerEvent) {
        condition.lock()
        allEvents.append(event)
        if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            condition.unlock()
            waiter.continuation.resume(returning: event)
            return
        }
        buffered.append(event)
        condition.broadcast()
        condition.unlock()
    }

    func processExited(status exitStatus: Int32) {
        update { $0.status = exitStatus }
    }

    /// Applies `change` under the lock, then wakes blocked callers and fails or finishes
    /// suspended ones that can no longer be satisfied.
    private func update(_ change: (PeerState) -> Void) {
        condition.lock()
        change(self)
        // A suspended event waiter implies an empty buffer: once the child is gone, none
        // will ever be served.
        var failed: [Waiter] = []
        if finished != nil {
            failed = waiters.map(\.continuation)
            waiters.removeAll()
        }
        var exited: [CheckedContinuation<Int32, any Error>] = []
        if status != nil, stderrClosed {
            exited = exitWaiters.map(\.continuation)
            exitWaiters.removeAll()
        }
        let context = contextLocked()
        let exitStatus = status ?? -1
        condition.broadcast()
        condition.unlock()
        for waiter in failed {
            waiter.resume(throwing: RustPeerError.exited(status: exitStatus, waitingFor: "an event", context: context))
        }
        for waiter in exited { waiter.resume(returning: exitStatus) }
    }

    /// The exit status once the child has exited and both pipes are drained.
    private var finished: Int32? {
        guard stdoutClosed, stderrClosed, let status else { return nil }
        return status
    }

    // MARK: Queries

    var stderrText: String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: stderrData, as: UTF8.self)
    }

    var history: [PeerEvent] {
        condition.lock()
        defer { condition.unlock() }
        return allEvents
    }

    var exitStatus: Int32? {
        condition.lock()
        defer { condition.unlock() }
        return status
    }

    func context() -> String {
        condition.lock()
        defer { condition.unlock() }
        return contextLocked()
    }

    private func contextLocked() -> String {
        let recent = allEvents.suffix(8).map { "  \($0.line)" }.joined(separator: "\n")
        let log = String(decoding: stderrData.suffix(4000), as: UTF8.self)
        return "\(label)\nlast events:\n\(recent)\nstderr (tail):\n\(log)"
    }

    // MARK: Blocking waits

    func nextBlocking(timeout: Duration, purpose: String) throws -> PeerEvent {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while buffered.isEmpty {
            if let status = finished {
                throw RustPeerError.exited(status: status, waitingFor: purpose, context: contextLocked())
            }
            if !condition.wait(until: deadline) && buffered.isEmpty && finished == nil {
                throw RustPeerError.timeout(waitingFor: purpose, after: timeout, context: contextLocked())
            }
        }
        return buffered.removeFirst()
    }

    func waitForExit(timeout: Duration, purpose: String) throws -> Int32 {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let status, stderrClosed { return status }
            if !condition.wait(until: deadline), status == nil || !stderrClosed {
                throw RustPeerError.timeout(waitingFor: purpose, after: timeout, context: contextLocked())
            }
        }
    }

    // MARK: Suspending waits

    func nextSuspending(timeout: Duration, purpose: String) async throws -> PeerEvent {
        let id = makeWaiterID()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: Waiter) in
                condition.lock()
                if cancelled.remove(id) != nil {
                    condition.unlock()
                    continuation.resume(throwing: CancellationError())
                } else if !buffered.isEmpty {
                    let event = buffered.removeFirst()
                    condition.unlock()
                    continuation.resume(returning: event)
                } else if let status = finished {
                    let context = contextLocked()
                    condition.unlock()
                    continuation.resume(
                        throwing: RustPeerError.exited(status: status, waitingFor: purpose, context: context))
                } else {
                    waiters.append((id, continuation))
                    condition.unlock()
                    DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { [self] in
                        expire(id) { RustPeerError.timeout(waitingFor: purpose, after: timeout, context: $0) }
                    }
                }
            }
        } onCancel: {
            expire(id, rememberIfAbsent: true) { _ in CancellationError() }
        }
    }

    func waitForExitSuspending(timeout: Duration) async throws -> Int32 {
        let id = makeWaiterID()
        return try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            if let status, stderrClosed {
                condition.unlock()
                continuation.resume(returning: status)
                return
            }
            exitWaiters.append((id, continuation))
            condition.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { [self] in
                condition.lock()
                guard let index = exitWaiters.firstIndex(where: { $0.id == id }) else {
                    condition.unlock()
                    return
                }
                let waiter = exitWaiters.remove(at: index)
                let context = contextLocked()
                condition.unlock()
                waiter.continuation.resume(
                    throwing: RustPeerError.timeout(waitingFor: "exit", after: timeout, context: context))
            }
        }
    }

    private func makeWaiterID() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        nextWaiterID += 1
        return nextWaiterID
    }

    /// Fails the suspended waiter `id` if it is still waiting (timeout or cancellation).
    /// A cancellation that arrives before the waiter registered is remembered.
    private func expire(_ id: UInt64, rememberIfAbsent: Bool = false, error: (String) -> any Error) {
        condition.lock()
        guard let index = waiters.firstIndex(where: { $0.id == id }) else {
            if rememberIfAbsent { cancelled.insert(id) }
            condition.unlock()
            return
        }
        let waiter = waiters.remove(at: index)
        let context = contextLocked()
        condition.unlock()
        waiter.continuation.resume(throwing: error(context))
    }
}

extension Duration {
    /// The duration in seconds, for Foundation and Dispatch deadlines.
    fileprivate var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) * 1e-18
    }
}
