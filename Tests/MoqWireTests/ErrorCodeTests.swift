// SPDX-License-Identifier: MIT
import MoqWire
import Testing

@Suite struct ErrorCodeTests {
    @Test(arguments: [
        (StreamErrorCode.internal, UInt64(0x52e4_a40f_a8db)) as (StreamErrorCode, UInt64), (.cancel, 0x52e4_a40f_a8dc),
        (.deliveryTimeout, 0x52e4_a40f_a8dd),
        (.tooFarBehind, 0x52e4_a40f_a8e0), (.malformedTrack, 0x52e4_a40f_a8ed), (.controlTimeout, 0x52e4_a40f_a90d),
        (.notFound, 0x52e4_a40f_a90f), (.old, 0x52e4_a40f_a910), (.evicted, 0x52e4_a40f_a911),
        (.unroutable, 0x52e4_a40f_a912), (.timestampMismatch, 0x52e4_a40f_a915),
    ])
    func streamCodesMapIntoTheWebTransportRange(code: StreamErrorCode, wire: UInt64) {
        #expect(code.wireValue == wire)
        #expect(StreamErrorCode(wireValue: wire) == code)
    }

    @Test func mappingRoundTripsAndSkipsReservedCodepoints() {
        for n in UInt64(0)..<5000 {
            let code = StreamErrorCode(rawValue: n)
            #expect(StreamErrorCode(wireValue: code.wireValue) == code)
        }
        // Codepoint base + 30 is one of the reserved (skipped) values.
        #expect(StreamErrorCode(wireValue: StreamErrorCode.webTransportBase + 30) == nil)
        // Raw 0 (quinn's STOP_SENDING noise) is outside the range.
        #expect(StreamErrorCode(wireValue: 0) == nil)
        #expect(StreamErrorCode.application(1).rawValue == 65)
    }

    @Test func sessionCodes() {
        #expect(SessionErrorCode.protocolViolation.rawValue == 0x3)
        #expect(SessionErrorCode.timeout.rawValue == 0x11)
        #expect(SessionErrorCode.application(2).rawValue == 66)
    }
}
