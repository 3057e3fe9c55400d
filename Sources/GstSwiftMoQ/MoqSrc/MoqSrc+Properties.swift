// SPDX-License-Identifier: MIT
import CGStreamer
import Dispatch
import GstSupport
import MoqCatalog
import MoqMedia
import MoqPlayback
import MoqSync
import MoqWire
import SwiftMoQ
import Synchronization

/// Properties and the URI they make.
extension MoqSrc {

    func setProperty(_ id: guint, _ value: UnsafePointer<GValue>) {
        guard let prop = MoqSrcType.Prop(rawValue: id) else { return }
        let live = currentState.rawValue > GST_STATE_READY.rawValue
        switch prop {
        case .latency:
            let ms = g_value_get_uint(value)
            settings.withLock {
                $0.latencyMs = ms
                $0.latencySet = true
            }
            if live { latencyChanged(UInt64(ms)) }
            return
        case .queue:
            let items = Self.broadcastList(string(from: value))
            settings.withLock { $0.queue = items }
            if live { onControlQueue { self.queueChanged(items) } }
            return
        case .abr, .maxResolution, .maxBitrate:
            settings.withLock { s in
                switch prop {
                case .abr: s.abr = g_value_get_boolean(value) != 0
                case .maxBitrate: s.maxBitrate = g_value_get_uint(value)
                default:
                    let text = String((string(from: value) ?? "").filter { !$0.isWhitespace })
                    if text.isEmpty || text == "0" {
                        (s.maxWidth, s.maxHeight) = (0, 0)
                    } else if let (w, h) = RenditionCap.resolution(text) {
                        (s.maxWidth, s.maxHeight) = (w, h)
                    } else {
                        reporter.warning(
                            .resource(GST_RESOURCE_ERROR_SETTINGS),
                            "max-resolution '\(text)' ignored (the cap stays as it was): expected WIDTHxHEIGHT, e.g. 1280x720 "
                                + "(0 or nothing: any; 0 for either: any width or any height)")
                    }
                }
            }
            if live { onControlQueue { self.selectionChanged() } }
            return
        case .diagnostics:
            diagnostics.store(g_value_get_boolean(value) != 0, ordering: .relaxed)
            return
        case .videoTrack, .audioTrack:
            let name = string(from: value)
            settings.withLock { if prop == .videoTrack { $0.videoTrack = name } else { $0.audioTrack = name } }
            if live { onControlQueue { self.selectionChanged() } }
            return
        default: break
        }
        if live {
            reporter.log(GST_LEVEL_WARNING, "property changes take effect only in NULL or READY: ignored")
            return
        }
        settings.withLock { s in
            if let connection = prop.connection { return s.connection.set(connection, from: value) }
            switch prop {
            case .broadcast: s.broadcast = string(from: value)
            case .prefix: s.prefix = string(from: value)
            case .timeout: s.timeoutS = g_value_get_uint(value)
            case .uriTLS: s.uriTLS = g_value_get_boolean(value) != 0
            case .buffering: s.longForm = Buffering(gValue: g_value_get_enum(value)) == .longForm
            case .latencyMode: s.latencyMode = LatencyMode(gValue: g_value_get_enum(value)) ?? .auto
            case .catchUp: s.catchUp = g_value_get_boolean(value) != 0
            case .bufferDuration: s.bufferDurationMs = g_value_get_uint(value)
            case .dataTracks: s.dataTracks = Self.trackList(string(from: value))
            default: break
            }
        }
    }

    /// `data-tracks`: names, trimmed, empty ones and repeats dropped, at most ``maxDataTracks``.
    static func trackList(_ text: String?) -> [String] {
        var names: [String] = []
        for part in (text ?? "").split(separator: ",") {
            let name = String(part.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
            if !name.isEmpty, !names.contains(name), names.count < maxDataTracks { names.append(name) }
        }
        return names
    }

    /// `queue`: broadcast paths, trimmed, empty ones dropped, at most ``maxQueueLength``.
    static func broadcastList(_ text: String?) -> [String] {
        var items: [String] = []
        for part in (text ?? "").split(separator: ",") {
            let item = String(part.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
            if !item.isEmpty, items.count < maxQueueLength { items.append(item) }
        }
        return items
    }

    /// Queue entries one element keeps at most.
    static let maxQueueLength = 1024

    /// Data pads one element makes at most.
    static let maxDataTracks = 16

    func getProperty(_ id: guint, _ value: UnsafeMutablePointer<GValue>) {
        guard let prop = MoqSrcType.Prop(rawValue: id) else { return }
        let s = settings.withLock { $0 }
        if let connection = prop.connection { return s.connection.get(connection, into: value) }
        if let status = prop.statusProperty { return status.get(link, into: value) }
        switch prop {
        case .url, .tlsDisableVerify, .tlsFingerprint, .tlsRootFile, .authToken, .quicIdleTimeout, .quicKeepAlive,
            .moqProtocol,
            .connectionStats, .sessions, .estimatedSendRate, .estimatedRecvRate, .estimatedSendBitrate,
            .estimatedRecvBitrate:
            break
        case .diagnostics: g_value_set_boolean(value, diagnostics.load(ordering: .relaxed) ? 1 : 0)
        case .broadcast: g_value_set_string(value, s.broadcast)
        case .prefix: g_value_set_string(value, s.prefix)
        case .latency: g_value_set_uint(value, s.latencyMs)
        case .videoTrack: g_value_set_string(value, s.videoTrack)
        case .abr: g_value_set_boolean(value, s.abr ? 1 : 0)
        case .maxBitrate: g_value_set_uint(value, s.maxBitrate)
        case .maxResolution:
            g_value_set_string(value, s.maxWidth == 0 && s.maxHeight == 0 ? nil : "\(s.maxWidth)x\(s.maxHeight)")
        case .audioTrack: g_value_set_string(value, s.audioTrack)
        case .timeout: g_value_set_uint(value, s.timeoutS)
        case .uriTLS: g_value_set_boolean(value, s.uriTLS ? 1 : 0)
        case .buffering: g_value_set_enum(value, (s.longForm ? Buffering.longForm : .live).rawValue)
        case .latencyMode: g_value_set_enum(value, s.latencyMode.rawValue)
        case .catchUp: g_value_set_boolean(value, s.catchUp ? 1 : 0)
        case .bufferDuration: g_value_set_uint(value, s.bufferDurationMs)
        case .dataTracks: g_value_set_string(value, s.dataTracks.isEmpty ? nil : s.dataTracks.joined(separator: ","))
        case .queue: g_value_set_string(value, s.queue.isEmpty ? nil : s.queue.joined(separator: ","))
        case .status: link.getStatus(into: value)
        case .moqVersion: g_value_set_string(value, link.negotiatedVersion)
        case .stats: g_value_take_boxed(value, makeStats(name: "application/x-moqsrc-stats"))
        }
    }

    /// Applies a playback URI (GstURIHandler).
    func setURI(_ uri: String) -> Result<Void, SettingsError> {
        if currentState.rawValue > GST_STATE_READY.rawValue {
            return .failure(SettingsError("the URI can only change in NULL or READY"))
        }
        let parsed: PlaybackURI
        do { parsed = try PlaybackURI(uri) } catch { return .failure(SettingsError(error.description)) }
        settings.withLock { s in
            s.connection.url = parsed.url
            s.broadcast = parsed.broadcast
            s.prefix = parsed.prefix
            s.uriTLSKeys = []
            s.uriProblems = []
            for (key, value) in parsed.properties {
                switch key {
                case "latency":
                    if let v = UInt32(value), v <= Self.maxLatencyMs {
                        s.latencyMs = v
                        s.latencySet = true
                    } else {
                        s.uriProblems.append(
                            .init(key: key, value: value, expected: "milliseconds from 0 to \(Self.maxLatencyMs)"))
                    }
                case "latency-mode":
                    if let mode = LatencyMode(nick: value) {
                        s.latencyMode = mode
                    } else {
                        let expected = LatencyMode.nicks.joined(separator: ", ")
                        s.uriProblems.append(.init(key: key, value: value, expected: expected))
                    }
                case "catch-up":
                    switch value {
                    case "true", "1": s.catchUp = true
                    case "false", "0": s.catchUp = false
                    default: s.uriProblems.append(.init(key: key, value: value, expected: "true or false"))
                    }
                case "timeout":
                    if let v = UInt32(value), v <= Self.maxTimeoutS {
                        s.timeoutS = v
                    } else {
                        let expected = "seconds from 0 (wait forever) to \(Self.maxTimeoutS)"
                        s.uriProblems.append(.init(key: key, value: value, expected: expected))
                    }
                case "video-track": s.videoTrack = value
                case "audio-track": s.audioTrack = value
                // Kept aside: honoured at start only if the application allows it (uri-tls).
                case "tls-fingerprint", "tls-disable-verify": s.uriTLSKeys.append((key, value))
                default: break
                }
            }
        }
        return .success(())
    }

    /// A URI query value that was not taken.
    struct URIValueProblem: Sendable {
        let key: String
        let value: String
        /// What the key takes, for the warning.
        let expected: String
    }

    /// The largest `latency`, in ms.
    static let maxLatencyMs: UInt32 = 60_000

    /// The largest `timeout`, in seconds.
    static let maxTimeoutS: UInt32 = 3600

    /// Warns about each URI value that was not taken (the property keeps its previous value).
    func reportURIProblems() {
        let problems = settings.withLock { $0.uriProblems }
        for problem in problems {
            reporter.warning(
                .resource(GST_RESOURCE_ERROR_SETTINGS),
                "the URI's \(problem.key)=\(problem.value) ignored: expected \(problem.expected)")
        }
    }

    /// TLS settings that came in a URI: applied when the application allows it (`uri-tls`, or
    /// SWIFTMOQ_URI_TLS=1), otherwise ignored with a warning that says how to allow them.
    func applyURITLS() {
        let allowedByEnvironment = getenv("SWIFTMOQ_URI_TLS").map { String(cString: $0) == "1" } ?? false
        let (keys, allowed) = settings.withLock { s -> ([(String, String)], Bool) in
            let allowed = s.uriTLS || allowedByEnvironment
            if allowed {
                for (key, value) in s.uriTLSKeys {
                    if key == "tls-fingerprint" { s.connection.tlsFingerprint = value }
                    if key == "tls-disable-verify" { s.connection.tlsDisableVerify = value == "true" || value == "1" }
                }
            }
            return (s.uriTLSKeys, allowed)
        }
        guard !keys.isEmpty, !allowed else { return }
        reporter.warning(
            .resource(GST_RESOURCE_ERROR_SETTINGS),
            "the URI's \(keys.map(\.0).joined(separator: " and ")) ignored: TLS settings come from properties "
                + "(tls-fingerprint, tls-disable-verify); set uri-tls=true (or SWIFTMOQ_URI_TLS=1) to take them from URIs"
        )
    }

    /// The URI of the current settings (the explicit `?broadcast=` form).
    var uri: String? {
        let s = settings.withLock { $0 }
        guard let url = s.connection.url else { return nil }
        return PlaybackURI.compose(url: url, broadcast: s.broadcast, prefix: s.prefix)
    }
}
