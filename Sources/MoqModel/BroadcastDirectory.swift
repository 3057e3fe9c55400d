// SPDX-License-Identifier: MIT
public import MoqWire

/// What a session serves to its peer: broadcasts by path, and announcements by
/// prefix. ``Origin`` is the plain directory; ``ScopedOrigin`` is a view of one
/// rooted at a path with permissions (what a relay gives each session).
public protocol BroadcastDirectory: AnyObject, Sendable {
    /// The broadcast at `path` (relative to this directory), if any.
    func broadcast(_ path: String) -> BroadcastProducer?
    /// Observes announcements under `prefix`; see ``Origin/observe(prefix:_:)``.
    func observe(prefix: String, _ handler: @escaping @Sendable (OriginEvent) -> Void)
        -> (token: UInt64, current: [(path: String, route: AnnounceRoute)])
    /// Ends an observation.
    func stopObserving(_ token: UInt64)
}

extension Origin: BroadcastDirectory {}

/// A view of an ``Origin`` below `root`: paths are relative to the root, and only
/// broadcasts under one of the `allowed` prefixes (relative to the root) exist.
///
/// This is how a relay scopes a session to its connection path (a client at
/// `/anon` publishing `room/cam` is `anon/room/cam` to a client at `/`).
public final class ScopedOrigin: BroadcastDirectory, @unchecked Sendable {
    /// The origin viewed.
    public let parent: Origin
    /// The root, normalised.
    public let root: String
    /// Prefixes (relative to the root) that may be seen; `[""]` allows everything.
    public let allowed: [String]

    public init(parent: Origin, root: String, allowed: [String] = [""]) {
        self.parent = parent
        self.root = BroadcastPath.normalize(root)
        self.allowed = allowed.map(BroadcastPath.normalize)
    }

    /// True when `relative` lies under an allowed prefix.
    public func isAllowed(_ relative: String) -> Bool {
        allowed.contains { BroadcastPath.hasPrefix(relative, $0) }
    }

    public func broadcast(_ path: String) -> BroadcastProducer? {
        let relative = BroadcastPath.normalize(path)
        guard isAllowed(relative) else { return nil }
        return parent.broadcast(BroadcastPath.join(root, relative))
    }

    public func observe(prefix: String, _ handler: @escaping @Sendable (OriginEvent) -> Void)
        -> (token: UInt64, current: [(path: String, route: AnnounceRoute)])
    {
        let root = self.root
        let full = BroadcastPath.join(root, prefix)
        let (token, current) = parent.observe(prefix: full) { [weak self] event in
            guard let self else { return }
            switch event {
            case .announced(let path, let route):
                guard let relative = BroadcastPath.strip(prefix: root, from: path), self.isAllowed(relative) else {
                    return
                }
                handler(.announced(path: relative, route: route))
            case .unannounced(let path):
                guard let relative = BroadcastPath.strip(prefix: root, from: path), self.isAllowed(relative) else {
                    return
                }
                handler(.unannounced(path: relative))
            }
        }
        let visible = current.compactMap { item -> (path: String, route: AnnounceRoute)? in
            guard let relative = BroadcastPath.strip(prefix: root, from: item.path), isAllowed(relative) else {
                return nil
            }
            return (relative, item.route)
        }
        return (token, visible)
    }

    public func stopObserving(_ token: UInt64) { parent.stopObserving(token) }
}
