// SPDX-License-Identifier: MIT
import CGStreamer
import GstSupport
import MoqCatalog
import MoqMedia

/// What a sink pad publishes, derived from its caps with GStreamer's codec utilities
/// (``MediaFormat``): the catalog rendition, the track-name family, the layout.
struct PadFormat: Equatable {
    var rendition: MediaRendition

    var kind: MediaKind { rendition.kind }
    var family: String { rendition.family }
    var codec: String { rendition.codec }
    var config: RenditionConfig { rendition.config }
    /// True while the codec string still waits for the first keyframe (e.g. avc3
    /// caps without profile and level).
    var isProvisional: Bool { rendition.isProvisional }

    static func from(caps: UnsafeMutablePointer<GstCaps>) -> Result<PadFormat, MediaFormatError> {
        do {
            return .success(PadFormat(rendition: try MediaFormat.rendition(forCaps: capsString(caps))))
        } catch {
            return .failure(error)
        }
    }

    /// The same format with its codec string completed from a keyframe.
    func refined(withKeyframe bytes: UnsafeRawBufferPointer) -> PadFormat {
        PadFormat(rendition: rendition.refined(withKeyframe: bytes))
    }
}
