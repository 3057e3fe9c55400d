// SPDX-License-Identifier: MIT
import Dispatch
import Foundation
import MoqCommandLine
import SwiftMoQ

/// `swiftmoq relay`: a moq-lite-06 relay.
enum RelayCommand {
    static let usage = """
        usage: swiftmoq relay [--listen HOST:PORT] (--tls-generate NAME… | --tls-cert FILE --tls-key FILE)
                              [--public PREFIX…] [--auth-key FILE] [--cluster-connect URL…] [--cluster-id N]
                              [--cluster-token FILE] [--upstream URL] [--cache-max-age S] [--cache-bytes N]

        Runs a relay: broadcasts announced by any session are offered to the others.
        The connection's path is the root a session publishes and subscribes under
        (a client at /anon publishing room/cam is anon/room/cam to a client at /).
        Prints "url …" and "fingerprint …" on standard output once listening; logs on
        standard error. SIGINT/SIGTERM send GOAWAY to every session, then exit.

          --listen HOST:PORT        address to listen on (default 127.0.0.1:4443 when neither --public
                                    nor --auth-key says who may use it, for such a relay is open to
                                    anyone who reaches it; else 0.0.0.0:4443)
          --tls-generate NAME       generate a self-signed ECDSA P-256 certificate for NAME
                                    (repeatable; the default is --tls-generate localhost), valid
                                    14 days as browsers require for serverCertificateHashes, and
                                    replaced by a new one every 7 days without a restart (the
                                    current fingerprint is at http://HOST:PORT/certificate.sha256)
          --tls-cert FILE           PEM certificate chain, with --tls-key FILE (its private key)
          --public PREFIX           paths under PREFIX are open without a token (repeatable);
                                    --public '' opens every path. With neither --public nor
                                    --auth-key every path is public, so the relay serves this
                                    machine only (127.0.0.1): an open relay must be asked for
          --auth-key FILE           HS256 key (JWK with "kty":"oct", or raw bytes) that signs ?jwt= tokens
                                    (claims: root, put, get, exp, nbf, peer — moq-relay's; "peer": true
                                    marks another relay's link, whose routes compete by cost)
          --cluster-connect URL     link with another relay as moq-relay's cluster peers do (repeatable):
                                    both offer every broadcast they know, and a viewer's track is pulled
                                    once through the cheapest route (then the fewest hops), moving to
                                    the next when a link dies. URL is moql://HOST:PORT/ (raw QUIC),
                                    https:// (WebTransport) or http:// (WebTransport pinned to the
                                    certificate the peer serves); ?cost=N prices the link (default:
                                    the peer's price, or 1), ?jwt=T authenticates it
          --cluster-id N            this relay's hop id, stable across restarts (1 to 2^53 − 1;
                                    random by default): routes through it are not taken back
          --cluster-token FILE      a token (a peer grant) sent as ?jwt= on every link
          --upstream URL            one more link, to a relay whose path root is URL's path: local
                                    broadcasts are announced there, its broadcasts served here
          --upstream-tls-fingerprint HEX, --upstream-tls-root-file FILE, --upstream-tls-disable-verify
                                    how the certificates of the upstream and the cluster peers are checked
          --cache-max-age S         keep groups at most S seconds (default: each track's max age)
          --cache-bytes N           bytes of groups cached across all tracks (default 268435456)
          --threads N               event loops sessions are spread across, one UDP socket each on the
                                    port, the kernel steering each datagram to its connection's loop
                                    (default 1: more help many viewers of one broadcast but cost a
                                    single stream's throughput; BENCHMARKS.md)
          --max-sessions N          concurrent sessions (default 1024)
          --max-subscriptions N     subscriptions per session (default 1000)
          --max-announces N         announce streams per session (default 100)
          --max-buffered-bytes N    unsent bytes per session before new groups wait (default 33554432)
          --max-incoming-bytes N    bytes of incomplete messages and frames held per session (default 67108864)
          --retry-threshold N       handshakes in progress before new clients must answer a Retry (default 64)
          --max-handshakes-per-address N
                                    handshakes in progress from one IP address (default 32)
          --web                     serve a watch page at http://HOST:PORT/ (WebTransport + WebCodecs:
                                    open it in Chromium to list and play the broadcasts)
          --no-http                 do not answer HTTP on TCP at the same port number (by default, as
                                    moq-relay: GET /certificate.sha256, /announced[/PREFIX][?jwt=…], /health;
                                    HTTPS too, with the relay's certificate, to clients that speak TLS)
          --no-websocket            do not accept moq-lite over WebSocket on the HTTP port (by default, as
                                    moq-relay: clients whose UDP is blocked fall back to it, subprotocol
                                    qmux-01.moq-lite-06; wss:// from anyone, plain ws:// from loopback only)
          --no-ietf                 do not accept IETF MoQ Transport (drafts 16 and 14, raw QUIC and
                                    WebTransport) beside moq-lite on the UDP port (by default such sessions are
                                    authorised by their SETUP path, or their CONNECT's over WebTransport, and
                                    relayed to and from moq-lite ones)
          --websocket-any-address   accept plain ws:// sessions from any address too (a trusted network, or
                                    TLS terminated in front of the relay): they are not encrypted
          --metrics                 also answer GET /metrics (Prometheus text: sessions, broadcasts, routes,
                                    subscriptions, bytes/frames/groups in and out, drops by reason, each
                                    event loop's CPU and queue, the peer links) and GET /sessions (JSON)
          --metrics-token FILE      with --metrics: ask for the token in FILE (Authorization: Bearer …);
                                    without it anyone who reaches the port reads them
          --log-level LEVEL         debug, info, warning or error (default info)

        examples:
          swiftmoq relay                                   # this machine only, every path public
          swiftmoq relay --listen 0.0.0.0:4443 --tls-generate relay.example --public anon --auth-key key.jwk
          swiftmoq relay --web                             # then open http://localhost:4443/ in Chromium
          swiftmoq relay --listen 127.0.0.1:4444 --upstream moql://relay.example:4443/anon --public anon
          swiftmoq relay --listen 0.0.0.0:4443 --public '' --cluster-id 7 \\
                         --cluster-connect http://relay-b.lan:4443/ --cluster-connect 'http://relay-c.lan:4443/?cost=10'

        """

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do {
            args = try Arguments(
                argv,
                options: [
                    "listen", "tls-generate", "tls-cert", "tls-key", "public", "auth-key", "upstream",
                    "cluster-connect", "cluster-id", "cluster-token", "metrics-token", "threads",
                    "upstream-tls-fingerprint", "upstream-tls-root-file", "cache-max-age", "cache-bytes",
                    "max-sessions",
                    "max-subscriptions", "max-announces", "max-buffered-bytes", "max-incoming-bytes",
                    "retry-threshold", "max-handshakes-per-address", "log-level",
                ],
                flags: [
                    "upstream-tls-disable-verify", "no-http", "web", "metrics", "no-websocket", "websocket-any-address",
                    "no-ietf",
                ])
        } catch { throw .usage(error.description) }

        var config = MoqRelay.Configuration()
        // Nothing says who may use this relay: it is open, so by default it serves this machine only.
        let open = args.all("public").isEmpty && args.value("auth-key") == nil
        let listen = args.value("listen") ?? (open ? "127.0.0.1:4443" : "0.0.0.0:4443")
        guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
            throw .usage("--listen must be HOST:PORT (got '\(listen)')")
        }
        config.host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        config.port = port

        let generate = args.all("tls-generate")
        switch (args.value("tls-cert"), args.value("tls-key"), generate.isEmpty) {
        case (let cert?, let key?, true): config.certificate = .files(certificateChain: cert, privateKey: key)
        case (nil, nil, _): config.certificate = .selfSigned(names: generate.isEmpty ? ["localhost"] : generate)
        case (_, _, false): throw .usage("use either --tls-generate or --tls-cert/--tls-key, not both")
        default: throw .usage("--tls-cert and --tls-key go together")
        }

        var level = LogLevel.info
        if let name = args.value("log-level") {
            guard let l = LogLevel(name: name) else {
                throw .usage("--log-level must be debug, info, warning or error")
            }
            level = l
        }
        let logger = MoqLogger.standardError(level: level, label: "relay")
        config.logger = logger
        config.serveHTTP = !args.has("no-http")
        config.serveWebSocket = !args.has("no-websocket")
        if args.has("no-ietf") { config.ietfVersions = [] }
        config.plainWebSocketFromAnyAddress = args.has("websocket-any-address")
        config.serveWatchPage = args.has("web")
        if config.serveWatchPage && !config.serveHTTP { throw .usage("--web needs HTTP: drop --no-http") }
        config.serveMetrics = args.has("metrics") || args.value("metrics-token") != nil
        if config.serveMetrics && !config.serveHTTP { throw .usage("--metrics needs HTTP: drop --no-http") }
        if let file = args.value("metrics-token") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8),
                !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
            else { throw .usage("--metrics-token: cannot read a token from '\(file)'") }
            config.metricsToken = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        var publicPrefixes = args.all("public")
        var key: [UInt8]?
        if let file = args.value("auth-key") {
            do { key = try RelayAuth.loadKey(file: file) } catch { throw .runtime(error.description) }
        }
        if publicPrefixes.isEmpty && key == nil {
            guard Self.isLoopback(config.host) else {
                throw .usage(
                    "refusing to run an open relay on \(config.host): with neither --public nor --auth-key every path "
                        + "is public. Pass --public '' to open every path to everyone, --public PREFIX for some, "
                        + "or --auth-key FILE to require tokens")
            }
            publicPrefixes = [""]
            logger.warning(
                "neither --public nor --auth-key given: every path is public, so the relay listens on \(config.host) only "
                    + "(pass --public '' to serve other machines)")
        }
        config.auth = RelayAuth(publicPrefixes: publicPrefixes, key: key)

        let linkTLS = TLSOptions(
            fingerprint: args.value("upstream-tls-fingerprint"), rootFile: args.value("upstream-tls-root-file"),
            disableVerify: args.has("upstream-tls-disable-verify"))
        if let upstream = args.value("upstream") {
            do { config.upstream = try MoqURL(upstream) } catch { throw .usage(error.description) }
            config.upstreamTLS = linkTLS
        }
        var clusterToken: String?
        if let file = args.value("cluster-token") {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw .usage("--cluster-token: cannot read '\(file)'")
            }
            clusterToken = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        for text in args.all("cluster-connect") {
            do {
                var link = try PeerLink(parsing: text, tls: linkTLS)
                // A token in the URL wins over --cluster-token.
                if !(link.url.query ?? "").contains("jwt=") { link.token = clusterToken }
                config.peers.append(link)
            } catch { throw .usage("--cluster-connect \(text): \(error.description)") }
        }
        if let id = args.value("cluster-id") {
            guard let v = UInt64(id), v > 0, v < 1 << 62 else {
                throw .usage("--cluster-id must be a whole number from 1 to 2^53 − 1 (got '\(id)')")
            }
            config.clusterID = v
        }
        if let s = args.value("cache-max-age") {
            guard let v = Double(s), v >= 0 else { throw .usage("--cache-max-age must be a number of seconds") }
            config.cacheMaxAgeMs = UInt64(v * 1000)
        }
        do {
            config.cacheBytes = try args.integer("cache-bytes", default: config.cacheBytes)
            config.maxSessions = try args.integer("max-sessions", default: config.maxSessions)
            config.threads = try args.integer("threads", default: 1)
            config.limits.maxServedSubscriptions = try args.integer(
                "max-subscriptions", default: config.limits.maxServedSubscriptions)
            config.limits.maxServedAnnounces = try args.integer(
                "max-announces", default: config.limits.maxServedAnnounces)
            config.limits.maxUnsentBytes = try args.integer("max-buffered-bytes", default: config.limits.maxUnsentBytes)
            config.limits.maxIncomingBytes = try args.integer(
                "max-incoming-bytes", default: config.limits.maxIncomingBytes)
            config.retryThreshold = try args.integer("retry-threshold", default: config.retryThreshold)
            config.maxHandshakesPerAddress = try args.integer(
                "max-handshakes-per-address", default: config.maxHandshakesPerAddress)
        } catch { throw .usage(error.description) }
        guard (1...256).contains(config.threads) else { throw .usage("--threads must be 1 to 256") }

        // Caught from before the relay says it is ready: a SIGTERM right after "fingerprint"
        // must shut down gracefully, not meet the default action.
        let signals = SignalWatch([SIGINT, SIGTERM])
        let relay: MoqRelay
        do { relay = try MoqRelay.start(config) } catch { throw .runtime(error.description) }
        Output.line("url \(relay.url)")
        Output.line("fingerprint \(relay.fingerprint)")
        if config.serveWatchPage, let http = relay.httpPort {
            let host = config.host == "0.0.0.0" || config.host == "::" ? "localhost" : config.host
            Output.line("watch http://\(host.contains(":") ? "[\(host)]" : host):\(http)/")
        }

        let stop = await signals.next()
        logger.info("received \(stop == SIGINT ? "SIGINT" : "SIGTERM")")
        await relay.shutdown(grace: .seconds(2))
    }
}

extension RelayCommand {
    /// True for addresses only this machine can reach.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
