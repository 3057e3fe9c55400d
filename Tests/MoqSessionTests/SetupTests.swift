// SPDX-License-Identifier: MIT
import MoqSession
import MoqWire
import Testing

@Suite struct SetupTests {
    @Test func bothSidesExchangeSetupAndTheServerSeesThePath() {
        let pair = SessionPair(clientConfig: SessionConfig(role: .subscriber, path: "/anon/room?jwt=abc", hopID: 777))
        #expect(pair.client.isReady)
        #expect(pair.server.isReady)
        #expect(pair.serverDelegate.setups.first?.path == "/anon/room?jwt=abc")
        #expect(pair.serverDelegate.setups.first?.role == .subscriber)
        #expect(pair.serverDelegate.setups.first?.origin == 777)
        // The server never sends a Path.
        #expect(pair.clientDelegate.setups.first?.path == nil)
    }

    @Test func theServerSendsNothingBeforeTheClientsSetup() {
        let pair = SessionPair(connect: false)
        pair.server.connected()
        pair.run()
        #expect(pair.link.client.log.isEmpty)
        pair.client.connected()
        pair.run()
        #expect(!pair.link.client.log.isEmpty)
        #expect(pair.client.isReady)
    }

    @Test func aMissingSetupTimesOutWithTheTimeoutCode() {
        let pair = SessionPair(connect: false)
        pair.server.connected()  // the client never speaks
        pair.scheduler.advance(by: .seconds(9))
        #expect(pair.server.closeReason == nil)
        pair.scheduler.advance(by: .seconds(2))
        #expect(pair.server.closeReason == .local(.timeout, "no SETUP from the peer"))
        #expect(pair.link.server.closed?.code == 0x11)
        #expect(pair.serverDelegate.closes.count == 1)
    }

    @Test func aSecondSetupIsAProtocolViolation() {
        let pair = SessionPair(connect: false)
        pair.server.connected()
        pair.run()
        let raw = pair.link.client
        raw.writeRaw(2, [0x01] + Setup().encoded(), fin: true)
        raw.writeRaw(6, [0x01] + Setup().encoded(), fin: true)
        pair.run()
        #expect(pair.server.closeReason == .local(.protocolViolation, "second Setup stream"))
        #expect(raw.log.contains(.closed(code: 0x3, reason: "second Setup stream")))
    }

    @Test func malformedSetupClosesTheSessionWithProtocolViolation() {
        let pair = SessionPair(connect: false)
        pair.server.connected()
        pair.run()
        // count 1, parameter Role with an impossible value.
        pair.link.client.writeRaw(2, [0x01, 0x04, 0x01, 0x03, 0x01, 0x09], fin: true)
        pair.run()
        #expect(pair.link.server.closed?.code == 0x3)
    }

    @Test func unknownUniStreamTypesAreIgnoredAndTheSessionSurvives() {
        let pair = SessionPair()
        pair.link.client.writeRaw(402, [0x2a, 1, 2, 3], fin: true)
        pair.run()
        #expect(pair.server.isReady)
        #expect(pair.server.counters.malformedStreams == 1)
    }

    @Test func unknownBidiStreamTypesAreResetWithCancel() {
        let pair = SessionPair()
        pair.link.client.writeRaw(400, [0x09, 0x00])
        pair.run()
        #expect(pair.server.isReady)
        #expect(pair.link.client.log.contains(.reset(stream: 400, code: StreamErrorCode.cancel.wireValue)))
    }

    @Test func requestsBeforeSetupWaitForIt() {
        let pair = SessionPair(connect: false)
        let b = pair.serverBroadcast("room/cam")
        b.createTrack("video").writeSingleFrameGroup(Bytes("x"), timestamp: 0)
        let track = pair.remoteTrack("video")
        pair.client.subscribe(broadcast: "room/cam", track: track, range: SubscriptionRange(maxLatencyMs: 1000))
        pair.client.connected()
        pair.server.connected()
        pair.run()
        #expect(pair.contents(track).map(\.1) == [["x"]])
    }

    @Test func closingIsReportedOnceOnBothSides() {
        let pair = SessionPair()
        pair.client.close(.application(1), reason: "bye")
        pair.run()
        #expect(pair.clientDelegate.closes == [.local(.application(1), "bye")])
        #expect(pair.serverDelegate.closes == [.remote(.application(1), "bye")])
        pair.client.close()
        pair.run()
        #expect(pair.clientDelegate.closes.count == 1)
    }

    @Test func goawayReachesThePeer() {
        let pair = SessionPair()
        pair.server.sendGoaway(uri: "moql://elsewhere:4443/")
        pair.run()
        #expect(pair.clientDelegate.goaways == ["moql://elsewhere:4443/"])
        // Clients always send an empty URI.
        pair.client.sendGoaway(uri: "ignored")
        pair.run()
        #expect(pair.serverDelegate.goaways == [""])
    }
}
