// SPDX-License-Identifier: MIT
import GstSwiftMoQ
import MoqKit
import MoqPipeline
import Testing

/// `KitLogger.setNativeLogLevel` is process-wide (first call wins): this suite runs in the
/// Makefile's SOLO group, where no other test depends on the elements' debug threshold.
@Suite("KitLogger", .serialized)
struct KitLoggerTests {
    @Test("the first valid level wins, sets the elements' GStreamer debug categories; unknown names are ignored")
    func firstCallWins() {
        SwiftMoQElements.register()
        #expect(KitLogger.nativeLogLevel == nil)
        #expect(!KitLogger.setNativeLogLevel("loud"))
        #expect(KitLogger.nativeLogLevel == nil)
        #expect(KitLogger.setNativeLogLevel("WARN"))
        #expect(!KitLogger.setNativeLogLevel("trace"))
        #expect(KitLogger.nativeLogLevel == .warn)
        #expect(GStreamer.debugThreshold(category: "moqsrc") == .warning)
        #expect(GStreamer.debugThreshold(category: "moqsink") == .warning)
    }
}
