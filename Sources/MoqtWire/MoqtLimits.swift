// SPDX-License-Identifier: MIT

/// Every bound the MoQ Transport codec enforces on what a peer sends, in one place. Sizes and
/// counts are checked before anything is buffered or allocated.
public enum MoqtLimits {
    /// A control message's payload (its length field is 16 bits).
    public static let maxControlMessage = 65_535
    /// Key-value pairs in one message, setup or extension list (as moq-dev).
    public static let maxParameters = 64
    /// One key-value pair's bytes (the drafts' 2^16 − 1).
    public static let maxParameterValue = 65_535
    /// Fields of a namespace tuple (the drafts' 32).
    public static let maxNamespaceFields = 32
    /// A Full Track Name: the namespace's fields and the track name together (the drafts' 4096).
    public static let maxFullTrackName = 4_096
    /// A reason phrase (the drafts' 1024).
    public static let maxReasonPhrase = 1_024
    /// GOAWAY's New Session URI (the drafts' 8192).
    public static let maxGoawayURI = 8_192
    /// Versions listed in a draft-14 CLIENT_SETUP.
    public static let maxSetupVersions = 64
    /// An object's extension headers (bytes).
    public static let maxObjectExtensions = 65_535
    /// One object's payload (as moq-lite's frame bound).
    public static let maxObjectPayload = 32 * 1024 * 1024
}
