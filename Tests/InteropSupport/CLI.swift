// SPDX-License-Identifier: MIT
package import Foundation

/// Runs the `swiftmoq` executable built alongside the tests.
package enum CLI {
    package struct Result {
        package var status: Int32
        package var stdout: String
        package var stderr: String
        package var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
        package var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// The executable: next to this test bundle (`swift build --build-tests` builds it).
    package static func executable() throws -> URL {
        let root = try RustPeer.packageRoot()
        let candidates = [
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("swiftmoq"),
            root.appendingPathComponent(".build/debug/swiftmoq"),
        ]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw RustPeerError.setupMissing("swiftmoq is not built: run `swift build` first")
        }
        return found
    }

    /// Starts `swiftmoq args…`; `stdin` is written then closed.
    package static func start(_ args: [String], stdin: String? = nil) throws -> Running {
        try Running(executable: executable(), args: args, stdin: stdin)
    }

    /// Runs to completion (killed after `timeout`).
    package static func run(_ args: [String], stdin: String? = nil, timeout: Duration = .seconds(30)) async throws
        -> Result
    {
        try await start(args, stdin: stdin).wait(timeout: timeout)
    }

    package final class Running: @unchecked Sendable {
        package let process = Process()
        private let out = Pipe()
        private let err = Pipe()
        private let input = Pipe()
        private let lock = NSLock()
        private var outData = Data()
        private var errData = Data()
        private let group = DispatchGroup()

        package init(executable: URL, args: [String], stdin: String?) throws {
            process.executableURL = executable
            process.arguments = args
            process.standardOutput = out
            process.standardError = err
            process.standardInput = input
            try process.run()
            for (pipe, isOut) in [(out, true), (err, false)] {
                group.enter()
                Thread.detachNewThread { [self] in
                    while true {
                        let chunk = pipe.fileHandleForReading.availableData
                        if chunk.isEmpty { break }
                        lock.withLock { if isOut { outData += chunk } else { errData += chunk } }
                    }
                    group.leave()
                }
            }
            if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
            if stdin != nil { try? input.fileHandleForWriting.close() }
        }

        /// Lines printed on stdout so far.
        package var stdoutLineCount: Int { lock.withLock { outData.reduce(0) { $0 + ($1 == 0x0a ? 1 : 0) } } }

        /// The process's resident memory in bytes (from /proc).
        package var residentBytes: Int {
            guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/statm", encoding: .utf8)
            else { return 0 }
            let fields = text.split(separator: " ")
            return (Int(fields.count > 1 ? fields[1] : "0") ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
        }

        /// What has been printed on stdout so far.
        package var stdoutSoFar: String { lock.withLock { String(decoding: outData, as: UTF8.self) } }

        package func closeInput() { try? input.fileHandleForWriting.close() }

        package func wait(timeout: Duration) async throws -> Result {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning {
                if ContinuousClock.now > deadline {
                    kill(process.processIdentifier, SIGKILL)
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            let (child, readers) = (Handed(process), Handed(group))
            try await offThePool {
                child.value.waitUntilExit()
                readers.value.wait()
            }
            return lock.withLock {
                Result(
                    status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                    stderr: String(decoding: errData, as: UTF8.self))
            }
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }
}
