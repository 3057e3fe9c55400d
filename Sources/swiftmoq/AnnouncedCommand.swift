// SPDX-License-Identifier: MIT
import MoqCommandLine
import SwiftMoQ

/// `swiftmoq announced`: one line per announce / unannounce under a prefix.
enum AnnouncedCommand {
    static let usage = """
        usage: swiftmoq announced --url URL [--prefix P] [--count N] [--timeout S] [--format lines|json]

        Prints a line per broadcast announced or unannounced under the prefix
        ("announce room/cam" / "unannounce room/cam"), until interrupted, until
        N lines were printed, or until S seconds passed.

        \(ClientFlags.help)
          --prefix P                only broadcasts under P (whole segments)
          --count N                 exit after N lines
          --timeout S               exit after S seconds
          --format lines|json       output format (default lines)

        example:
          swiftmoq announced --url moql://localhost:4443/anon --tls-fingerprint $FP --prefix room
        """

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do {
            args = try Arguments(
                argv, options: ClientFlags.options.union(["prefix", "count", "timeout", "format"]),
                flags: ClientFlags.flags)
        } catch { throw .usage(error.description) }
        let client = try ClientFlags(args)
        let prefix = args.value("prefix") ?? ""
        let count: Int?
        let timeout: Duration?
        do {
            count = try args.optionalInteger("count")
            timeout = args.value("timeout") == nil ? nil : try args.seconds("timeout", default: .zero)
        } catch { throw .usage(error.description) }
        let json = args.value("format") == "json"
        let sessions = try await client.follow(role: .subscriber)
        defer { sessions.stop() }
        let printed = await withTaskGroup(of: Int?.self) { group -> Int? in
            group.addTask {
                var n = 0
                var active = Set<String>()
                var session = sessions.current
                // Each session in turn (a successor after GOAWAY announces the same broadcasts
                // again: only changes are printed).
                while let current = session {
                    for await event in current.announced(prefix: prefix) {
                        switch event {
                        case .active(let path, _):
                            guard active.insert(path).inserted else { continue }
                            Output.line(
                                json ? "{\"event\":\"announce\",\"path\":\(path.jsonQuoted)}" : "announce \(path)")
                        case .ended(let path):
                            // The old session's end is not the broadcast's, if a successor took over.
                            if sessions.successor(of: current) != nil { continue }
                            guard active.remove(path) != nil else { continue }
                            Output.line(
                                json ? "{\"event\":\"unannounce\",\"path\":\(path.jsonQuoted)}" : "unannounce \(path)")
                        case .closed:
                            continue
                        }
                        n += 1
                        if let count, n >= count { return n }
                    }
                    session = sessions.successor(of: current)
                }
                return nil
            }
            if let timeout {
                group.addTask {
                    try? await Task.sleep(for: timeout)
                    return -1
                }
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if printed == nil, let error = sessions.error {
            throw .runtime("the session ended: \(error)")
        }
    }
}
