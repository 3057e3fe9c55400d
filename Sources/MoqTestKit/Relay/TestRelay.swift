// SPDX-License-Identifier: MIT
public import MoqPipeline
import MoqSync
public import SwiftMoQ

/// A `MoqRelay` in this process on 127.0.0.1, on a free port, with a generated certificate to pin.
///
/// ```swift
/// let relay = try TestRelay.start()
/// relay.moqsinkProperties(broadcast: "room/cam")  // url=moql://127.0.0.1:41234/anon broadcast=room/cam tls-fingerprint=…
/// await relay.stop()                               // clients see the connection close
/// try await relay.restart()                        // same port, same certificate: pins still hold
/// ```
///
/// Every path is public (no token needed).
public final class TestRelay: Sendable {
    /// The UDP port (kept across ``restart()``).
    public let port: UInt16
    /// SHA-256 of the certificate (hex), for `tls-fingerprint` and ``SwiftMoQ/TLSOptions/fingerprint``.
    public let fingerprint: String
    /// The connection path clients use (`anon`).
    public let path: String
    private let certificates: CertificateFiles
    private let logger: MoqLogger
    private let upstream: Upstream?
    private let current: Lock<MoqRelay?>

    /// The relay this one joins (`swiftmoq relay --upstream`).
    private struct Upstream: Sendable {
        let url: MoqURL
        let fingerprint: String
    }

    private init(
        port: UInt16, fingerprint: String, path: String, certificates: CertificateFiles, logger: MoqLogger,
        upstream: Upstream?, relay: MoqRelay
    ) {
        self.port = port
        self.fingerprint = fingerprint
        self.path = path
        self.certificates = certificates
        self.logger = logger
        self.upstream = upstream
        current = Lock(relay)
    }

    /// Starts a relay on a free port.
    ///
    /// - Parameters:
    ///   - path: the connection path in ``url(via:)`` (the relay serves every path).
    ///   - logger: where the relay logs (`.standardError(level: .debug, label: "relay")` to watch it).
    ///   - upstream: a relay this one joins (`swiftmoq relay --upstream`): broadcasts published on
    ///     either are available on both. The two share one certificate, as the relays of one
    ///     cluster do, so a client pinned to one may follow a GOAWAY to the other.
    public static func start(path: String = "anon", logger: MoqLogger = .silent, upstream: TestRelay? = nil)
        throws(TestKitError) -> TestRelay
    {
        let certificates: CertificateFiles
        if let shared = upstream?.certificates {
            certificates = shared
        } else {
            certificates = try CertificateFiles(names: ["localhost", "127.0.0.1"])
        }
        var link: Upstream?
        if let upstream {
            do { link = Upstream(url: try MoqURL(upstream.url()), fingerprint: upstream.fingerprint) } catch {
                throw .relay("upstream URL: \(error)")
            }
        }
        let relay = try launch(port: 0, certificates: certificates, logger: logger, upstream: link)
        return TestRelay(
            port: relay.port, fingerprint: relay.fingerprint, path: path, certificates: certificates, logger: logger,
            upstream: link, relay: relay)
    }

    private static func launch(port: UInt16, certificates: CertificateFiles, logger: MoqLogger, upstream: Upstream?)
        throws(TestKitError) -> MoqRelay
    {
        var configuration = MoqRelay.Configuration(
            host: "127.0.0.1", port: port,
            certificate: .files(certificateChain: certificates.certificate, privateKey: certificates.privateKey),
            auth: RelayAuth(publicPrefixes: [""]), logger: logger)
        if let upstream {
            configuration.upstream = upstream.url
            configuration.upstreamTLS = TLSOptions(fingerprint: upstream.fingerprint)
        }
        do { return try MoqRelay.start(configuration) } catch { throw .relay("cannot start on port \(port): \(error)") }
    }

    /// `moql://127.0.0.1:<port>/<path>`, or the same through `proxy`.
    public func url(via proxy: UDPProxy? = nil) -> String {
        "moql://127.0.0.1:\(proxy?.port ?? port)/\(path)"
    }

    /// `url=… tls-fingerprint=…`: what a `moqsink` or `moqsrc` needs to reach this relay.
    public func connectionProperties(via proxy: UDPProxy? = nil) -> String {
        "url=\(url(via: proxy)) tls-fingerprint=\(fingerprint)"
    }

    /// `url=… broadcast=… tls-fingerprint=…` for a `moqsink` publishing `broadcast` here.
    public func moqsinkProperties(broadcast: String, via proxy: UDPProxy? = nil) -> String {
        "url=\(url(via: proxy)) broadcast=\(PipelineValue.string(broadcast)) tls-fingerprint=\(fingerprint)"
    }

    /// Client options that pin this relay's certificate.
    public var clientOptions: ClientOptions { ClientOptions(tls: TLSOptions(fingerprint: fingerprint)) }

    /// A client session to this relay (or through `proxy`).
    public func connect(via proxy: UDPProxy? = nil) async throws(MoqError) -> MoqSession {
        try await MoqSession.connect(url(via: proxy), options: clientOptions)
    }

    /// The relay while it runs (nil between ``stop()`` and ``restart()``).
    public var relay: MoqRelay? { current.withLock { $0 } }

    /// Whether the relay runs.
    public var isRunning: Bool { relay != nil }

    /// Stops the relay: every session is closed at once (after a GOAWAY), and the port is released.
    public func stop() async {
        let relay = current.withLock { r -> MoqRelay? in
            defer { r = nil }
            return r
        }
        await relay?.shutdown(grace: .zero)
    }

    /// Starts the relay again on the same port with the same certificate (a no-op while it runs). The
    /// port is retried for up to 2 s, as the old socket may still be closing.
    public func restart() async throws(TestKitError) {
        if isRunning { return }
        let deadline = ContinuousClock.now + .seconds(2)
        while true {
            do {
                let relay = try Self.launch(port: port, certificates: certificates, logger: logger, upstream: upstream)
                current.withLock { $0 = relay }
                return
            } catch {
                if ContinuousClock.now >= deadline { throw error }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    deinit {
        if let relay = current.withLock({ $0 }) { Task { await relay.shutdown(grace: .zero) } }
    }
}

extension Element {
    /// A `moqsink` publishing `broadcast` to `relay` (through `proxy` when given), pinned to its certificate.
    public static func moqsink(
        name: String? = "moq", relay: TestRelay, broadcast: String, via proxy: UDPProxy? = nil
    ) -> Element {
        Element("moqsink", name: name).set("url", relay.url(via: proxy)).set("broadcast", broadcast)
            .set("tls-fingerprint", relay.fingerprint)
    }

    /// A `moqsrc` playing `broadcast` from `relay` (through `proxy` when given), pinned to its certificate.
    public static func moqsrc(
        name: String? = "src", relay: TestRelay, broadcast: String, via proxy: UDPProxy? = nil
    ) -> Element {
        Element("moqsrc", name: name).set("url", relay.url(via: proxy)).set("broadcast", broadcast)
            .set("tls-fingerprint", relay.fingerprint)
    }
}
