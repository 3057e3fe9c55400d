// SPDX-License-Identifier: MIT
// libFuzzer target over every moq-lite-06 decoder, HTTP/3's and qmux's. Linked by `make fuzz` with
// MoqWire, MoqWebTransport and MoqQMux built as instrumented modules (`-enable-testing`: QPACK's
// Huffman code and structured fields are internal to MoqWebTransport).
//
// The first input byte picks the decoder; the rest is the input. Decoding may fail
// with a typed error (expected); it must never crash, hang or allocate from a
// declared size. A message that decodes must re-encode and decode to itself.
import MoqQMux
import MoqWire

@testable import MoqWebTransport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let selector = start.load(as: UInt8.self)
    let input = Bytes(copying: UnsafeRawBufferPointer(start: start + 1, count: count - 1))
    // Selectors 252…255: qmux (the sources of MoqQMux are in this module too): records (252, 253),
    // the WebSocket reader (254), a server connection fed records and driven (255); 240…251: the
    // WebTransport/HTTP/3 decoders (MoqWebTransport's). Below 240 the moq-lite decoders keep their
    // selectors (and the corpus its meaning).
    if selector >= 252 {
        let bytes = input.withUnsafeBytes { Array($0) }
        switch selector {
        case 254: fuzzWebSocket(bytes)
        case 255: fuzzQMuxConnection(bytes)
        default: fuzzQMux(bytes)
        }
        return 0
    }
    if selector >= 240 {
        fuzzHTTP3(selector - 240, input.withUnsafeBytes { Array($0) })
        return 0
    }
    switch selector % 12 {
    case 0: roundTrip(Setup.self, input)
    case 1: roundTrip(AnnounceRequest.self, input)
    case 2: roundTrip(AnnounceOk.self, input)
    case 3: roundTrip(TrackRequest.self, input)
    case 4: roundTrip(TrackInfo.self, input)
    case 5: roundTrip(Subscribe.self, input)
    case 6: roundTrip(SubscribeUpdate.self, input)
    case 7: roundTrip(Fetch.self, input)
    case 8:
        var r = WireReader(input)
        while let message = try? Announcement.decode(from: &r) {
            if case .unknown = message { continue }
            var again = WireReader(Bytes(message.encoded()))
            precondition((try? Announcement.decode(from: &again)) == message, "announcement round trip")
        }
        var r2 = WireReader(input)
        while let message = try? SubscribeResponse.decode(from: &r2) {
            if case .unknown = message { continue }
            var again = WireReader(Bytes(message.encoded()))
            precondition((try? SubscribeResponse.decode(from: &again)) == message, "subscribe response round trip")
        }
    case 9:
        if let d = try? Datagram.decode(input) {
            precondition((try? Datagram.decode(Bytes(d.encoded()))) == d, "datagram round trip")
        }
    case 10, 11:
        // A group or fetch stream, split at points chosen by the input itself.
        var decoder = FrameDecoder(expectHeader: selector % 12 == 10, frameLimit: 1 << 20)
        var whole = FrameDecoder(expectHeader: selector % 12 == 10, frameLimit: 1 << 20)
        let expected = input.withUnsafeBytes { try? whole.feed($0, fin: true) }
        var events: [FrameStreamEvent] = []
        var failed = false
        var offset = 0
        var step = 1
        input.withUnsafeBytes { buffer in
            while offset <= buffer.count && !failed {
                let end = min(buffer.count, offset + step)
                do {
                    events += try decoder.feed(
                        UnsafeRawBufferPointer(rebasing: buffer[offset..<end]), fin: end == buffer.count)
                } catch {
                    failed = true
                }
                if end == buffer.count { break }
                step = Int(buffer[offset]) % 7 + 1
                offset = end
            }
        }
        if let expected, !failed {
            precondition(events == expected, "split decoding differs from whole decoding")
        }
        var control = StreamBuffer(limit: 4096)
        input.withUnsafeBytes { control.append($0) }
        _ = control.readVarInt()
        while (try? control.next(Subscribe.self)) != nil {}
    default:
        break
    }
    return 0
}

private func roundTrip<M: WireMessage>(_ type: M.Type, _ input: Bytes) {
    var r = WireReader(input)
    guard let message = try? M.decodeFramed(from: &r) else { return }
    var again = WireReader(Bytes(message.encoded()))
    precondition((try? M.decodeFramed(from: &again)) == message, "\(M.self) round trip")
}

/// A qmux record: typed errors only; the frames that decode re-encode to frames that decode to
/// the same (close reasons aside: invalid UTF-8 is replaced).
private func fuzzQMux(_ bytes: [UInt8]) {
    guard let frames = try? QMuxFrame.decodeRecord(Bytes(bytes), limit: 1 << 16) else { return }
    for frame in frames {
        let again = try? QMuxFrame.decodeRecord(Bytes(frame.encoded()), limit: 1 << 20)
        switch frame {
        case .connectionClose, .applicationClose: precondition(again?.count == 1, "qmux close re-decodes")
        default: precondition(again == [frame], "qmux round trip of \(frame)")
        }
    }
}

/// The WebSocket reader fed in pieces the input sizes: typed errors only, never more buffered than
/// one frame's header and payload.
private func fuzzWebSocket(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    var reader = WebSocketReader(maxMessage: 4_096, expectMasked: first & 1 == 0)
    var offset = 1
    while offset < bytes.count {
        let step = Int(bytes[offset]) % 64 + 1
        bytes[offset..<min(bytes.count, offset + step)].withUnsafeBytes { reader.append($0) }
        offset += step
        do {
            while let message = try reader.next() {
                if case .binary(let b) = message { precondition(b.count <= 4_096, "message over the limit") }
            }
        } catch {
            return
        }
        precondition(reader.buffered <= 4_096 + 14 + 64, "WebSocket reader held too much")
    }
}

/// A server connection after a valid handshake, fed records and driven by the input: a byte below
/// 0xf0 is a record of that many bytes; 0xf0… open a stream and write, consume, reset, stop, tick,
/// drain. Typed closes only; records out stay within the peer's size; unsent bytes are what was
/// written and not sent.
private func fuzzQMuxConnection(_ bytes: [UInt8]) {
    var now: UInt64 = 0
    var settings = QMuxSettings()
    settings.maxStreamData = 4_096
    settings.maxData = 16_384
    settings.maxStreamsUni = 8
    settings.maxStreamsBidi = 8
    let server = QMuxConnection(isClient: false, settings: settings, now: now)
    var p = QMuxTransportParameters()
    p.initialMaxData = 8_192
    p.initialMaxStreamDataUni = 2_048
    p.initialMaxStreamDataBidiLocal = 2_048
    p.initialMaxStreamDataBidiRemote = 2_048
    p.initialMaxStreamsUni = 4
    p.initialMaxStreamsBidi = 4
    server.receive(record: Bytes(QMuxFrame.transportParameters(p).encoded()), now: now)
    var opened: [Int64] = []
    var offset = 0
    while offset < bytes.count, server.closeReason == nil {
        let op = bytes[offset]
        offset += 1
        now += 1_000_000
        switch op {
        case 0..<0xf0:
            let end = min(bytes.count, offset + Int(op))
            server.receive(record: Bytes(bytes[offset..<end]), now: now)
            offset = end
        case 0xf0, 0xf1:
            if let id = server.openStream(bidirectional: op == 0xf1) { opened.append(id) }
            if let id = opened.last { server.write(id, Bytes([UInt8](repeating: op, count: 3_000)), fin: op == 0xf1) }
        case 0xf2: for id in opened { server.consumed(id, bytes: 1_000) }
        case 0xf3: if let id = opened.first { server.resetStream(id, code: UInt64(op)) }
        case 0xf4: if let id = opened.last { server.stopSending(id, code: 1) }
        case 0xf5: now += 10_000_000_000
        default: break
        }
        for event in server.takeEvents() {
            if case .received(let id, let data, _) = event, op & 1 == 0 { server.consumed(id, bytes: data.count) }
        }
        server.tick(now: now)
        while let record = server.nextRecord(now: now) {
            precondition(record.count <= 16_382, "record over the peer's size")
        }
        precondition(server.totalUnsentBytes >= 0, "unsent bytes below zero")
    }
}

/// HTTP/3 frames (split where the input says), QPACK field sections, Huffman strings, capsules and
/// the CONNECT check: typed errors only; whatever decodes re-encodes to the same fields.
private func fuzzHTTP3(_ which: UInt8, _ bytes: [UInt8]) {
    switch which % 6 {
    case 0:
        var reader = HTTP3FrameReader()
        var offset = 0
        while offset < bytes.count {
            let step = Int(bytes[offset]) % 5 + 1
            reader.append(bytes[offset..<min(bytes.count, offset + step)])
            offset += step
            do {
                while try reader.next() != nil {}
            } catch {
                return
            }
        }
        precondition(reader.buffered <= HTTP3FrameReader.maxDataPayload + 32, "frame reader held too much")
    case 1:
        guard let fields = try? QPACK.decode(bytes) else { return }
        precondition((try? QPACK.decode(QPACK.encode(fields))) == fields, "QPACK round trip")
        _ = try? WebTransportConnect.Request(fields: fields)
        _ = try? WebTransportConnect.Response(fields: fields)
    case 2:
        guard let decoded = try? Huffman.decode(bytes, limit: 4096) else { return }
        precondition((try? Huffman.decode(Huffman.encode(decoded), limit: 4096)) == decoded, "Huffman round trip")
    case 3:
        var reader = CapsuleReader()
        reader.append(bytes)
        while let capsule = try? reader.next() {
            if case .unknown = capsule { continue }
            // A reason that is not UTF-8 is repaired (U+FFFD) and may be cut to 1024 bytes on the
            // way back: one re-encoding normalises it, a second must change nothing.
            var again = CapsuleReader()
            again.append(capsule.encoded())
            guard let normal = try? again.next() else { preconditionFailure("capsule does not re-decode") }
            var third = CapsuleReader()
            third.append(normal.encoded())
            precondition((try? third.next()) == normal, "capsule round trip")
        }
        precondition(reader.buffered <= bytes.count, "capsule reader grew")
    case 4:
        _ = StructuredList.decode(String(decoding: bytes, as: UTF8.self))
        _ = WebTransportWire.parseDatagram(bytes)
    default:
        // A server endpoint fed a hostile client's streams: each chunk is (stream id byte, length byte, bytes).
        let sink = FuzzStreams()
        let endpoint = WebTransportEndpoint(role: .server, streams: sink)
        _ = try? endpoint.start()
        var i = 0
        while i + 2 <= bytes.count {
            let stream = Int64(bytes[i] & 0x3f)
            let count = min(Int(bytes[i + 1]), bytes.count - i - 2)
            let chunk = Array(bytes[(i + 2)..<(i + 2 + count)])
            i += 2 + count
            guard let events = try? endpoint.received(stream: stream, chunk, fin: bytes[i - count - 2] & 0x40 != 0)
            else {
                return
            }
            if events.contains(where: { if case .connectRequest = $0 { true } else { false } }) {
                _ = endpoint.accept(protocol: "moq-lite-06")
            }
        }
        precondition(endpoint.trackedStreams <= 64 + 64, "endpoint tracks too many streams")
    }
}

/// Streams of a fuzzed endpoint: writes are dropped.
private final class FuzzStreams: WebTransportStreams {
    var next: Int64 = 3
    func openStream(bidirectional: Bool) -> Int64? {
        defer { next += 4 }
        return next
    }
    func write(_ stream: Int64, _ bytes: [UInt8], fin: Bool) {}
    func stopSending(_ stream: Int64, code: UInt64) {}
    func resetStream(_ stream: Int64, code: UInt64) {}
    func closeConnection(code: UInt64, reason: String) {}
}
