// SPDX-License-Identifier: MIT
// libFuzzer target over MoQ Transport's decoders (MoqtWire, drafts 14 and 16). Linked by `make fuzz`
// with MoqtWire built as an instrumented module.
//
// The first input byte picks the draft (bit 0) and what is decoded (bits 1…): a control stream of
// framed messages, a subgroup or fetch stream fed in pieces whose sizes the input chooses, key-value
// pairs, or one OBJECT_DATAGRAM. Decoding may fail with a typed error (expected); it must never
// crash, hang or allocate from a declared size.
// A message that decodes re-encodes to bytes that decode to the same message once normalised
// (a reason phrase's invalid UTF-8 is replaced, so the first re-encoding may differ from the input).
import MoqBase
import MoqWire
import MoqtWire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMoqt(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let selector = start.load(as: UInt8.self)
    let version: MoqtVersion = selector & 1 == 0 ? .draft14 : .draft16
    let input = Array(UnsafeRawBufferPointer(start: start + 1, count: count - 1))
    switch (selector >> 1) % 5 {
    case 0: controlStream(input, version)
    case 1: _ = piecewise(SubgroupStreamDecoder(version: version), input)
    case 2: fetchStream(input, version)
    case 3: keyValuePairs(input, version)
    default: objectDatagram(input, version)
    }
    return 0
}

/// Framed messages, one after another: each that decodes must survive encode → decode unchanged
/// after one normalising round.
func controlStream(_ input: [UInt8], _ version: MoqtVersion) {
    var reader = ControlStreamReader()
    reader.append(input)
    while let (type, payload) = reader.next() {
        guard let message = try? ControlMessage.decode(type: type, payload: payload, version: version) else { continue }
        guard let once = message.encoded(version: version) else { continue }  // e.g. a draft-only message
        let normalised = decodeOne(once, version)
        precondition(normalised != nil, "a re-encoded \(message) does not decode")
        if let normalised, let twice = normalised.encoded(version: version) {
            precondition(decodeOne(twice, version) == normalised, "round trip of \(normalised)")
        }
    }
    precondition(reader.buffered <= input.count, "the reader holds more than it was given")
}

func decodeOne(_ bytes: [UInt8], _ version: MoqtVersion) -> ControlMessage? {
    var reader = ControlStreamReader()
    reader.append(bytes)
    guard let (type, payload) = reader.next() else { return nil }
    return try? ControlMessage.decode(type: type, payload: payload, version: version)
}

/// A data stream's decoder (subgroup or fetch stream).
protocol StreamDecoding {
    associatedtype Event: Equatable
    mutating func feed(_ bytes: [UInt8], fin: Bool) throws(DecodeError) -> [Event]
}

extension SubgroupStreamDecoder: StreamDecoding {}
extension FetchStreamDecoder: StreamDecoding {}

/// A fetch stream, fed whole and in pieces; each object it yields re-encodes to itself.
func fetchStream(_ input: [UInt8], _ version: MoqtVersion) {
    for case .object(let object) in piecewise(FetchStreamDecoder(version: version), input) ?? [] {
        var w = WireWriter()
        FetchHeader.encode(requestID: 0, into: &w)
        object.encode(into: &w, version: version)
        var again = FetchStreamDecoder(version: version)
        let decoded = try? again.feed(w.bytes, fin: true)
        precondition(decoded == [.header(requestID: 0), .object(object)], "fetch object round trip")
    }
}

/// A stream fed whole and in pieces of growing size: both yield the same events (or both fail).
/// Returns what it yielded whole.
func piecewise<Decoder: StreamDecoding>(_ fresh: Decoder, _ input: [UInt8]) -> [Decoder.Event]? {
    var whole = fresh
    let expected = try? whole.feed(input, fin: true)
    var pieces = fresh
    var events: [Decoder.Event] = []
    var offset = 0
    var step = 1
    var failed = false
    while !failed {
        let end = min(input.count, offset + step)
        do {
            events += try pieces.feed(Array(input[offset..<end]), fin: end == input.count)
        } catch {
            failed = true
        }
        if end == input.count { break }
        offset = end
        step = step * 2 + Int(input[offset] & 3)
    }
    if let expected {
        precondition(!failed && events == expected, "pieces and whole disagree")
    } else {
        precondition(failed, "pieces decoded what whole refused")
    }
    return expected
}

/// Key-value pairs, counted and to the end: what decodes re-encodes to itself.
func keyValuePairs(_ input: [UInt8], _ version: MoqtVersion) {
    for counted in [true, false] {
        var r = WireReader(Bytes(input))
        guard let pairs = try? KeyValuePairs.decode(from: &r, version: version, counted: counted) else { continue }
        var w = WireWriter()
        pairs.encode(into: &w, version: version, counted: counted)
        var again = WireReader(Bytes(w.bytes))
        let decoded = try? KeyValuePairs.decode(from: &again, version: version, counted: counted)
        // Draft-16 sorts by key on the wire: the decoded order is already sorted.
        precondition(decoded == pairs, "key-value pairs round trip")
    }
}

/// One OBJECT_DATAGRAM: what decodes re-encodes to a datagram that decodes to the same value (the
/// bytes may differ: an explicit object id 0 is written omitted).
func objectDatagram(_ input: [UInt8], _ version: MoqtVersion) {
    guard let datagram = try? ObjectDatagram.decode(Bytes(input), version: version) else { return }
    let again = try? ObjectDatagram.decode(Bytes(datagram.encoded(version: version)), version: version)
    precondition(again == datagram, "datagram round trip of \(datagram)")
}
