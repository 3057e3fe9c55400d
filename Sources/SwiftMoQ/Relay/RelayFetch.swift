// SPDX-License-Identifier: MIT
import MoqBase
import MoqModel

/// `GET /fetch/<broadcast>/<track>?group=N|latest&frame=N&jwt=…`, as moq-relay serves it: one
/// group's frames from the relay's cache, for tools and CDNs that poll (a catalog, a thumbnail).
///
/// - `group`: a sequence, or `latest` (the default): the newest group the relay holds.
/// - `frame`: one frame's bytes; without it, every frame of the group, back to back, as moq-relay's
///   `chunked` (no framing between them: a one-frame group, such as a catalog's, is the frame).
/// - Authorised like a session at the broadcast's path (public prefixes, or `jwt`).
///
/// What this relay holds is what its viewers are pulling: a track no one reads here is not
/// subscribed upstream for a fetch (moq-relay subscribes and waits up to 30 s), and a group still
/// being written comes with the frames received so far (`X-Moq-Group-Complete: false`). A group
/// of more than ``maxFetchBytes`` is refused; its frames can be fetched one by one.
extension MoqRelay {
    /// The most bytes one fetch answers with: the endpoint holds each answer in memory until it is
    /// taken, so its 64 connections hold at most 256 MiB (the relay cache's own default budget).
    static let maxFetchBytes = 4 << 20

    func fetch(_ head: HTTPRequestHead) -> HTTPResponse {
        let rest = String(head.path.dropFirst("/fetch/".count))
        guard let slash = rest.lastIndex(of: "/"), slash != rest.startIndex, rest.index(after: slash) != rest.endIndex
        else { return HTTPResponse(status: 400, body: "fetch: the path is /fetch/<broadcast>/<track>\n") }
        let broadcastPath = String(rest[..<slash])
        let trackName = String(rest[rest.index(after: slash)...])

        var sequence: UInt64?
        switch head.query["group"] {
        case nil, "latest"?: sequence = nil
        case let text?:
            guard let n = UInt64(text) else {
                return HTTPResponse(
                    status: 400, body: "fetch: group must be a sequence number or latest (got '\(text)')\n")
            }
            sequence = n
        }
        var frameIndex: Int?
        switch head.query["frame"] {
        case nil, "chunked"?: frameIndex = nil
        case let text?:
            guard let n = Int(text), n >= 0 else {
                return HTTPResponse(status: 400, body: "fetch: frame must be an index or chunked (got '\(text)')\n")
            }
            frameIndex = n
        }

        let query = head.query["jwt"].map { "?jwt=" + PercentEncoding.encode($0) } ?? ""
        let permissions: RelayPermissions
        switch configuration.auth.authorize(setupPath: broadcastPath + query) {
        case .failure(let error): return HTTPResponse(status: 401, body: "\(error.description)\n")
        case .success(let p): permissions = p
        }
        let scoped = ScopedOrigin(parent: origin, root: permissions.root, allowed: permissions.subscribe)
        guard let broadcast = scoped.broadcast("") else {
            return HTTPResponse(status: 404, body: "fetch: broadcast '\(broadcastPath)' is not announced here\n")
        }
        guard let track = broadcast.existingTrack(trackName) else {
            return HTTPResponse(
                status: 404,
                body: "fetch: track '\(trackName)' of '\(broadcastPath)' is not in this relay's cache "
                    + "(only tracks its viewers are reading are)\n")
        }
        guard let group = sequence.map({ track.group(sequence: $0) }) ?? track.latestGroup else {
            let held = track.groups(from: 0)
            let range = held.first.map { "it holds groups \($0.sequence)–\(held.last?.sequence ?? $0.sequence)" }
            return HTTPResponse(
                status: 404,
                body: "fetch: group \(sequence.map(String.init) ?? "latest") of '\(trackName)' is not in the cache"
                    + " (\(range ?? "it holds none yet"))\n")
        }
        let (frames, status) = track.frames(of: group, from: 0)
        var body: [UInt8] = []
        if let frameIndex {
            guard frameIndex < frames.count else {
                return HTTPResponse(
                    status: 404,
                    body: "fetch: group \(group.sequence) has \(frames.count) frames (asked for \(frameIndex))\n")
            }
            body = frames[frames.startIndex + frameIndex].payload.array
        } else {
            let total = frames.reduce(0) { $0 + $1.payload.count }
            guard total <= Self.maxFetchBytes else {
                return HTTPResponse(
                    status: 413,
                    body:
                        "fetch: group \(group.sequence) holds \(total) bytes, more than \(Self.maxFetchBytes) at once: "
                        + "fetch its frames one by one (frame=N)\n")
            }
            body.reserveCapacity(total)
            for frame in frames { body += frame.payload.array }
        }
        var response = HTTPResponse(status: 200, bytes: body)
        response.headers = [
            "X-Moq-Group": "\(group.sequence)", "X-Moq-Frames": "\(frames.count)",
            "X-Moq-Group-Complete": status == .open ? "false" : "true",
        ]
        return response
    }
}
