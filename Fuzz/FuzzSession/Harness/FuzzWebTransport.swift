// SPDX-License-Identifier: MIT
import MoqSession
import MoqWebTransport
import MoqWire

/// The session fuzzer's WebTransport mode: the peer's bytes reach the core through the HTTP/3
/// endpoint and the router, exactly as `SessionConnection` routes a QUIC connection's events,
/// and the peer also plays the HTTP/3 side (SETTINGS, the CONNECT and its answer, QPACK and
/// unknown streams, capsules, preambles naming other sessions).
final class FuzzWebTransport {
    let router: WebTransportRouter
    unowned let core: SessionCore
    let transport: FuzzTransport
    private var started = false
    /// The HTTP/3 side ended the session (an error, the peer's capsule or refusal): a close the
    /// script caused, with a stated reason.
    private(set) var closedByPeer = false

    init(transport: FuzzTransport, core: SessionCore, isClient: Bool) {
        self.transport = transport
        self.core = core
        let request = WebTransportConnect.Request(authority: "fuzz:443", path: "/anon", protocols: ["moq-lite-06"])
        router = WebTransportRouter(connection: transport, role: isClient ? .client(request) : .server)
    }

    func start() {
        guard !started else { return }
        started = true
        do { handle(try router.endpoint.start()) } catch { fail(error) }
    }

    func received(_ stream: Int64, _ data: UnsafeRawBufferPointer, fin: Bool) {
        guard router.route(stream) == .endpoint else {
            core.received(stream: stream, data: data, fin: fin)
            return
        }
        do { handle(try router.received(stream, data, fin: fin)) } catch { fail(error) }
    }

    func reset(_ stream: Int64, code: UInt64) {
        if router.route(stream) == .core {
            core.streamReset(stream: stream, wireCode: code)
        } else if stream == router.endpoint.sessionID {
            handle([.closed(code: 0, reason: "the peer reset the CONNECT stream")])
        } else {
            router.abandon(stream)
        }
    }

    func closed(_ stream: Int64) {
        if router.route(stream) == .core { core.streamClosed(stream: stream) }
        router.closed(stream)
    }

    func datagram(_ data: UnsafeRawBufferPointer) {
        if let payload = router.datagramPayload(data) { core.datagramReceived(payload) }
    }

    private func handle(_ events: [WebTransportEndpoint.Event]) {
        for event in events {
            switch event {
            case .connectRequest(let request):
                if request.path.hasPrefix("/deny") {
                    router.endpoint.reject(status: 403)
                } else {
                    handle(router.accept(protocol: request.protocols.isEmpty ? nil : "moq-lite-06"))
                }
            case .ready:
                core.connected()
            case .sessionStream(let id, let initial, let fin):
                core.streamOpened(id)
                if !initial.isEmpty || fin { initial.withUnsafeBytes { core.received(stream: id, data: $0, fin: fin) } }
            case .closed(let code, let reason):
                end(.remote(SessionErrorCode(rawValue: UInt64(code)), reason), code: 0)
                return
            case .rejected(let status):
                end(.transport("CONNECT refused with \(status)"), code: 0)
                return
            case .draining:
                break
            }
        }
    }

    private func fail(_ error: HTTP3Error) {
        end(.transport(error.description), code: error.code)
    }

    private func end(_ reason: SessionCloseReason, code: UInt64) {
        closedByPeer = true
        core.transportClosed(reason)
        transport.close(code: code, reason: "")
    }

    // MARK: What the peer sends on the HTTP/3 side

    /// A preamble for a peer stream: usually the session's, sometimes another session's, an
    /// HTTP/3 stream type, a cut one or nothing.
    func preamble(bidirectional: Bool, _ input: inout FuzzInput) -> [UInt8] {
        let session = UInt64(clamping: router.endpoint.sessionID ?? 0)
        switch input.int(8) {
        case 0: return bidirectional ? [0x40, 0x41] : [0x40, 0x54]  // cut after the type
        case 1:
            return bidirectional
                ? WebTransportWire.bidiStreamHeader(session: input.value())
                : WebTransportWire.uniStreamHeader(session: input.value())
        case 2: return []
        default:
            return bidirectional
                ? WebTransportWire.bidiStreamHeader(session: session)
                : WebTransportWire.uniStreamHeader(session: session)
        }
    }

    /// A whole HTTP/3 stream of the peer's (not a session stream).
    func http3Stream(bidirectional: Bool, _ input: inout FuzzInput) -> [UInt8] {
        if bidirectional {
            // A second request stream, or frames that are not one.
            return input.bool() ? headers(request(&input)) : frames(&input)
        }
        switch input.int(6) {
        case 0, 1: return [UInt8(WebTransportWire.controlStreamType)] + frames(&input)
        case 2: return [UInt8(WebTransportWire.qpackEncoderStreamType)] + input.bytes(max: 16)
        case 3: return [UInt8(WebTransportWire.qpackDecoderStreamType)] + input.bytes(max: 16)
        case 4: return [UInt8(WebTransportWire.pushStreamType)] + input.bytes(max: 8)
        default:
            var w = WireWriter()
            w.writeVarInt(input.value())
            return w.bytes + input.bytes(max: 16)
        }
    }

    /// What goes on the CONNECT stream: the request (server core), the answer (client core),
    /// capsules, or anything.
    func connectStreamBytes(_ input: inout FuzzInput) -> [UInt8] {
        switch input.int(7) {
        case 0: return headers(request(&input))
        case 1:
            let statuses = [200, 200, 403, 404, 101, 0]
            let status = statuses[input.int(statuses.count)]
            return headers(WebTransportConnect.Response(status: status, selectedProtocol: "moq-lite-06").fields)
        case 2:
            let reason = String(decoding: input.bytes(max: 40), as: UTF8.self)
            return HTTP3Frame.data(
                WebTransportCapsule.close(code: UInt32(truncatingIfNeeded: input.value()), reason: reason).encoded()
            ).encoded()
        case 3:
            var capsule: [UInt8] = []
            VarInt.encode(input.bool() ? WebTransportCapsule.drainType : input.value(), into: &capsule)
            let body = input.bytes(max: 16)
            VarInt.encode(input.bool() ? UInt64(body.count) : input.value(), into: &capsule)
            return HTTP3Frame.data(capsule + body).encoded()
        case 4: return HTTP3Frame.headers(input.bytes(max: 24)).encoded()
        default: return frames(&input)
        }
    }

    private func request(_ input: inout FuzzInput) -> [HTTPField] {
        var fields = WebTransportConnect.Request(
            authority: "fuzz:443", path: input.bool() ? "/anon" : "/deny",
            protocols: input.bool() ? ["moq-lite-06"] : []
        ).fields
        switch input.int(6) {
        case 0: fields.remove(at: input.int(fields.count))
        case 1: fields.append(HTTPField(input.name(), input.name()))
        case 2: fields[input.int(fields.count)] = HTTPField(":protocol", input.name())
        default: break
        }
        return fields
    }

    private func headers(_ fields: [HTTPField]) -> [UInt8] { HTTP3Frame.headers(QPACK.encode(fields)).encoded() }

    /// HTTP/3 frames: SETTINGS (ours, a peer's, or with values at the edges), GOAWAY, reserved
    /// and unknown types, lengths past the end.
    private func frames(_ input: inout FuzzInput) -> [UInt8] {
        var out: [UInt8] = []
        for _ in 0..<(1 + input.int(3)) {
            switch input.int(5) {
            case 0: out += HTTP3Frame.settings(.webTransport()).encoded()
            case 1:
                let settings = HTTP3Settings((0..<input.int(6)).map { _ in (id: input.value(), value: input.value()) })
                out += HTTP3Frame.settings(settings).encoded()
            case 2: out += HTTP3Frame.goaway(input.value()).encoded()
            default:
                VarInt.encode(input.bool() ? 0x21 + 0x1f * UInt64(input.int(100)) : input.value(), into: &out)
                let body = input.bytes(max: 16)
                VarInt.encode(input.int(4) == 0 ? input.value() : UInt64(body.count), into: &out)
                out += body
            }
        }
        return out
    }
}

extension FuzzTransport: WebTransportConnectionIO {
    func write(_ stream: Int64, _ bytes: [UInt8], fin: Bool) { write(stream, Bytes(bytes), fin: fin) }
    func closeConnection(code: UInt64, reason: String) { close(code: code, reason: reason) }
    func consume(_ stream: Int64, bytes: Int) { consumed(stream, bytes: bytes) }
}
