// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import SwiftMoQ

/// The connection properties moqsrc and moqsink both install: one name, blurb and reader/writer
/// each, so the two elements cannot drift apart.
enum ConnectionProperty: String, CaseIterable {
    case url, tlsDisableVerify, tlsFingerprint, tlsRootFile, authToken, quicIdleTimeout, quicKeepAlive, moqProtocol

    /// The property's spec (read-write, changeable in NULL and READY).
    func spec() -> UnsafeMutablePointer<GParamSpec> {
        let rw = ParamFlags.readWrite | ParamFlags.mutableReady | ParamFlags.showDefault
        switch self {
        case .url:
            return Property.string(
                "url", "URL",
                "Relay URL: moql://host:port/path (raw QUIC), https://host:port/path (WebTransport), http://host:port/path (WebTransport pinned to the hash the relay serves, falling back to WebSocket where UDP is blocked), ws://host:port/path (WebSocket only, unencrypted) or wss://host:port/path (WebSocket over TLS, verified as for QUIC; https:// falls back to it too); the path is the root the relay scopes the session to, e.g. moql://localhost:4443/anon",
                flags: rw)
        case .tlsDisableVerify:
            return Property.bool(
                "tls-disable-verify", "Disable TLS verification",
                "Do not verify the relay's certificate. INSECURE: for testing only", default: false, flags: rw)
        case .tlsFingerprint:
            return Property.string(
                "tls-fingerprint", "TLS fingerprint",
                "Pin the relay's certificate by its SHA-256 (64 hex digits) instead of checking it against CAs",
                flags: rw)
        case .tlsRootFile:
            return Property.string(
                "tls-root-file", "TLS root file", "PEM file of CA certificates to trust instead of the system's",
                flags: rw)
        case .authToken:
            return Property.string("auth-token", "Auth token", "Token sent to the relay as ?jwt=", flags: rw)
        case .quicIdleTimeout:
            return Property.uint(
                "quic-idle-timeout", "QUIC idle timeout",
                "Close the connection (and reconnect) after this long (ms) without hearing from the relay, as moq-gst's; moq-dev's relays use 10 s",
                min: 1_000, max: 600_000, default: ConnectionSettings.defaultIdleTimeoutMs, flags: rw)
        case .quicKeepAlive:
            return Property.uint(
                "quic-keep-alive", "QUIC keep-alive",
                "Send a PING after this long (ms) without sending anything, so that the relay (and any NAT on the way) keeps the connection while only receiving; 0: never. Keep it well below quic-idle-timeout",
                min: 0, max: 600_000, default: ConnectionSettings.defaultKeepAliveMs, flags: rw)
        case .moqProtocol:
            return Property.enumeration(
                "protocol", "Protocol",
                "Protocol family offered to the relay, which chooses: auto (moq-lite first, then IETF MoQ Transport drafts 16 and 14: moq-dev's relays keep moq-lite, IETF-only relays such as Cloudflare's get MoQ Transport), moq-lite, ietf (drafts 16 and 14), ietf-16, ietf-14. MoQ Transport runs on raw QUIC (moql://) and WebTransport (https://, offered in the CONNECT); moq-version says what was chosen",
                type: MoqProtocolType.type, default: 0, flags: rw)
        }
    }
}

/// The `protocol` property's enum type (its values are ``MoqProtocol``'s cases, in order).
enum MoqProtocolType {
    static let type: GType = registerEnum(
        "GstMoqProtocol",
        MoqProtocol.allCases.enumerated().map { index, value in
            (Int32(index), Self.describe(value), value.rawValue)
        })

    static func describe(_ value: MoqProtocol) -> String {
        switch value {
        case .auto: "moq-lite first, then IETF MoQ Transport"
        case .moqLite: "moq-lite only"
        case .ietf: "IETF MoQ Transport (draft-16, then draft-14)"
        case .ietf16: "IETF MoQ Transport draft-16 only"
        case .ietf14: "IETF MoQ Transport draft-14 only"
        }
    }

    static func value(_ index: Int32) -> MoqProtocol {
        MoqProtocol.allCases.indices.contains(Int(index)) ? MoqProtocol.allCases[Int(index)] : .auto
    }

    static func index(_ value: MoqProtocol) -> Int32 { Int32(MoqProtocol.allCases.firstIndex(of: value) ?? 0) }
}

/// An element's property ids. Those named like a ``ConnectionProperty`` case are that shared
/// property (`Prop.url` is ``ConnectionProperty/url``).
protocol ElementPropertyID {}

extension ElementPropertyID {
    /// The shared connection property this id is, if it is one.
    var connection: ConnectionProperty? { ConnectionProperty(rawValue: String(describing: self)) }
}

extension ConnectionSettings {
    /// Stores a property value.
    mutating func set(_ property: ConnectionProperty, from value: UnsafePointer<GValue>) {
        switch property {
        case .url: url = string(from: value)
        case .tlsDisableVerify: tlsDisableVerify = g_value_get_boolean(value) != 0
        case .tlsFingerprint: tlsFingerprint = string(from: value)
        case .tlsRootFile: tlsRootFile = string(from: value)
        case .authToken: authToken = string(from: value)
        case .quicIdleTimeout: quicIdleTimeoutMs = g_value_get_uint(value)
        case .quicKeepAlive: quicKeepAliveMs = g_value_get_uint(value)
        case .moqProtocol: moqProtocol = MoqProtocolType.value(g_value_get_enum(value))
        }
    }

    /// Reads a property value.
    func get(_ property: ConnectionProperty, into value: UnsafeMutablePointer<GValue>) {
        switch property {
        case .url: g_value_set_string(value, url)
        case .tlsDisableVerify: g_value_set_boolean(value, tlsDisableVerify ? 1 : 0)
        case .tlsFingerprint: g_value_set_string(value, tlsFingerprint)
        case .tlsRootFile: g_value_set_string(value, tlsRootFile)
        case .authToken: g_value_set_string(value, authToken)
        case .quicIdleTimeout: g_value_set_uint(value, quicIdleTimeoutMs)
        case .quicKeepAlive: g_value_set_uint(value, quicKeepAliveMs)
        case .moqProtocol: g_value_set_enum(value, MoqProtocolType.index(moqProtocol))
        }
    }
}
