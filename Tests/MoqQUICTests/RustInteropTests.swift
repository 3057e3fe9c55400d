// SPDX-License-Identifier: MIT
import Foundation
import MoqQUIC
// Interop with the real Rust moq implementation (PyPI moq-rs 0.5.1) driven by rust_peer.py from
// <package root>/.venv. Skipped with a message when that virtualenv is missing.
import MoqSync
import MoqWire
import Testing

/// The package root, found from this file's path (Tests/MoqQUICTests/<file>).
private let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
private let venvPython = packageRoot.appendingPathComponent(".venv/bin/python").path
private let peerScript = packageRoot.appendingPathComponent("Tests/MoqQUICTests/rust_peer.py").path
private let venvReady = FileManager.default.isExecutableFile(atPath: venvPython)

/// A running rust_peer.py; its stdout lines are collected and can be waited for.
private final class RustPeer: @unchecked Sendable {
    private let process = Process()
    private let stdin = Pipe()
    private let stdout = Pipe()
    private let lines = Lock<[String]>([])
    private let condition = Condition()

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: venvPython)
        process.arguments = [peerScript] + arguments
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        let handle = stdout.fileHandleForReading
        let buffer = Lock<[UInt8]>([])
        handle.readabilityHandler = { [self] h in
            let chunk = h.availableData
            if chunk.isEmpty {
                h.readabilityHandler = nil
                return
            }
            let complete: [String] = buffer.withLock { b in
                b.append(contentsOf: chunk)
                var out: [String] = []
                while let nl = b.firstIndex(of: 10) {
                    out.append(String(decoding: b[..<nl], as: UTF8.self))
                    b.removeSubrange(...nl)
                }
                return out
            }
            if !complete.isEmpty {
                lines.withLock { $0.append(contentsOf: complete) }
                condition.signal()
            }
        }
        try process.run()
    }

    /// The first line starting with `prefix`, waiting for it (generous timeout).
    func line(startingWith prefix: String, timeout: Duration = .seconds(60)) async -> String? {
        _ = await condition.wait(timeout) { [self] in self.lines.withLock { $0.contains { $0.hasPrefix(prefix) } } }
        return lines.withLock { $0.first { $0.hasPrefix(prefix) } }
    }

    func stop() {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

@Suite(
    .serialized,
    .enabled(
        if: venvReady, "no virtualenv with moq-rs at <package root>/.venv (pip install moq-rs==0.5.1 moq-ffi==0.4.18)"))
struct RustInteropTests {
    @Test func swiftClientTalksToRustServer() async throws {
        let peer = try RustPeer(["server"])
        defer { peer.stop() }
        let ready = try #require(await peer.line(startingWith: "READY"), "the Rust server did not start")
        let parts = ready.split(separator: " ")
        let port = try #require(UInt16(parts[1]))
        let fingerprint = try #require(Hex.decode(String(parts[2])))

        let loop = try QUICEventLoop(name: "interop")
        defer { loop.shutdown() }
        let setupStream = Lock<Int64?>(nil)
        let client = Recorder(onConnect: { connection in
            // Minimal moq-lite SETUP on our own uni stream: type 0x01, then an empty message.
            guard let id = connection.openStream(bidirectional: false) else { return }
            connection.write(id, [0x01, 0x01, 0x00], fin: true)
            setupStream.withLock { $0 = id }
        })
        let connection = QUICClient.connect(
            host: "127.0.0.1", port: port, tls: TLSClientConfiguration(verification: .fingerprints([fingerprint])),
            settings: QUICSettings(), loop: loop, delegate: client)
        #expect(await client.wait { $0.connected || !$0.closes.isEmpty })
        #expect(client.snapshot.connected, "closes: \(client.snapshot.closes)")
        let alpn = await onLoop(loop) { connection.negotiatedALPN }
        #expect(alpn == "moq-lite-06")
        // The server answers with its own SETUP on a uni stream it opens (server uni ids are 3 mod 4).
        #expect(await client.wait { s in s.data.contains { $0.key & 3 == 3 && $0.value.first == 0x01 } })
        #expect(await peer.line(startingWith: "ACCEPTED") != nil)
        #expect(setupStream.withLock { $0 } != nil)
        await onLoop(loop) { connection.close(code: 0, reason: "done") }
        #expect(await client.wait { !$0.closes.isEmpty })
    }

    @Test func systemVerificationRefusesRustSelfSignedServer() async throws {
        let peer = try RustPeer(["server"])
        defer { peer.stop() }
        let ready = try #require(await peer.line(startingWith: "READY"))
        let port = try #require(UInt16(ready.split(separator: " ")[1]))
        let loop = try QUICEventLoop(name: "interop-sys")
        defer { loop.shutdown() }
        let client = Recorder()
        _ = QUICClient.connect(
            host: "127.0.0.1", port: port, tls: TLSClientConfiguration(verification: .system, serverName: "localhost"),
            settings: QUICSettings(), loop: loop, delegate: client)
        #expect(await client.wait { !$0.closes.isEmpty })
        guard case .tls(let text)? = client.snapshot.closes.first else {
            Issue.record("expected .tls, got \(client.snapshot.closes)")
            return
        }
        #expect(text.contains("not trusted"))
        #expect(!client.snapshot.connected)
    }

    @Test func rustClientTalksToSwiftServer() async throws {
        let loop = try QUICEventLoop(name: "interop-srv")
        defer { loop.shutdown() }
        let identity = try ServerIdentity(.selfSigned(names: ["localhost"]))
        let serverSide = Recorder(onData: { connection, stream, data, fin in
            // Answer the client's SETUP (uni stream type 0x01) with ours.
            if stream & 3 == 2, data.first == 0x01, let id = connection.openStream(bidirectional: false) {
                connection.write(id, [0x01, 0x01, 0x00], fin: true)
            }
        })
        let connections = Lock<[QUICConnection]>([])
        let server = try QUICServer.listen(
            host: "127.0.0.1", port: 0, identity: identity, settings: QUICSettings(), loop: loop
        ) { connection in
            connections.withLock { $0.append(connection) }
            return serverSide
        }
        let peer = try RustPeer(["client", String(server.localPort), identity.fingerprint])
        defer { peer.stop() }
        #expect(await serverSide.wait { $0.connected })
        let first = try #require(connections.withLock { $0.first })
        let alpn = await onLoop(loop) { first.negotiatedALPN }
        #expect(alpn == "moq-lite-06")
        let outcome = await peer.line(startingWith: "CONNECTED", timeout: .seconds(60))
        #expect(outcome != nil, "the Rust client did not connect")
    }

    @Test func rustClientRejectsWrongPin() async throws {
        let loop = try QUICEventLoop(name: "interop-pin")
        defer { loop.shutdown() }
        let identity = try ServerIdentity(.selfSigned(names: ["localhost"]))
        let serverSide = Recorder()
        let server = try QUICServer.listen(
            host: "127.0.0.1", port: 0, identity: identity, settings: QUICSettings(), loop: loop
        ) { _ in serverSide }
        let peer = try RustPeer(["client", String(server.localPort), String(repeating: "ab", count: 32)])
        defer { peer.stop() }
        #expect(await peer.line(startingWith: "FAILED") != nil)
        #expect(!serverSide.snapshot.connected)
    }
}
