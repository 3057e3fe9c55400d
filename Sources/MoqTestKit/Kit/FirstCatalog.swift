// SPDX-License-Identifier: MIT
public import MoqKit

extension Session {
    /// The first broadcast this session sees under `prefix`, and the first of its catalogs that
    /// `accept` takes: publishers complete their catalog track by track as their encoders start, so
    /// a test waits for the catalog it needs (`{ !$0.playableAudioTracks.isEmpty }`).
    ///
    /// - Throws: ``TestKitError/timedOut(_:)`` when none comes within `timeout`;
    ///   ``TestKitError/expectationFailed(_:)`` when the broadcasts or the catalogs end first; what
    ///   ``subscribe(prefix:)`` throws.
    public func firstCatalog(
        prefix: String = "", timeout: Duration = .seconds(20), where accept: @escaping @Sendable (Catalog) -> Bool
    ) async throws -> (broadcast: Broadcast, catalog: Catalog) {
        let subscription = try subscribe(prefix: prefix)
        return try await withTimeout("a catalog under '\(prefix)'", timeout) {
            guard let broadcast = await subscription.broadcasts.first(where: { _ in true }) else {
                throw TestKitError.expectationFailed("the broadcasts under '\(prefix)' ended before one came")
            }
            guard let catalog = await broadcast.catalogs().first(where: accept) else {
                throw TestKitError.expectationFailed("the catalogs of \(broadcast.path) ended before one was accepted")
            }
            return (broadcast, catalog)
        }
    }
}
