// SPDX-License-Identifier: MIT
import CGStreamer
import MoqCatalog
import MoqMedia
import SwiftMoQ

/// A `sink_%u` pad fed fragmented MP4 (`isofmp4mux`, `cmafmux`, `mp4mux fragment-duration=…`):
/// each track of the init segment becomes a rendition in the `cmaf` container with its own
/// init segment, and each sample a frame (a one-sample `moof` + `mdat`), as moq-dev's fMP4
/// importer publishes it.
///
/// - Video: a new group at each sync sample; audio: one sample per group.
/// - Names: the pad's `track` for a single-track input, else `<pad index>.<track ID>.m4s`.
/// - The bytes are parsed as they come (buffer boundaries do not matter); the stream's own
///   timing (`tfdt`, `trun`) is kept, and the frame timestamp is the presentation time in µs.
///
/// Runs on the pad's streaming thread only.
final class CMAFInput {
    private struct Output {
        let name: String
        let track: CMAFTrack
        let producer: TrackProducer
        var group: GroupProducer?
    }

    private let padIndex: Int
    private let padTrackName: String?
    private var pending: [UInt8] = []
    private var ftyp: [UInt8] = []
    private var initBytes: [UInt8]?
    private var cmafInit: CMAFInit?
    private var outputs: [UInt32: Output] = [:]
    private var decodeTimes: [UInt32: UInt64] = [:]
    private var sequence: UInt32 = 0
    /// Track names published, for the catalog on release.
    private(set) var trackNames: [String] = []

    /// Bytes waiting for a box to complete (a fragment, or the init segment) beyond this are refused.
    static let maxPendingBytes = 256 << 20
    /// Where the unread bytes of ``pending`` start (compacted once per buffer, not per box).
    private var readOffset = 0

    init(padIndex: Int, padTrackName: String?) {
        self.padIndex = padIndex
        self.padTrackName = padTrackName
    }

    /// What one buffer produced: bytes and groups published, samples dropped before a keyframe.
    struct Progress {
        var frames = 0
        var groups = 0
        var bytes = 0
        var dropped = 0
    }

    /// Takes the bytes of one buffer; publishes whatever complete fragments they finish.
    /// - Throws: a message for the element's error (malformed MP4, or a track that cannot be published).
    func take(_ bytes: UnsafeRawBufferPointer, sink: MoqSink, run: MoqSink.Running) throws(CMAFInputError)
        -> Progress
    {
        if readOffset > 0 {
            pending.removeFirst(readOffset)
            readOffset = 0
        }
        pending += bytes
        guard pending.count <= Self.maxPendingBytes else {
            throw CMAFInputError("more than \(Self.maxPendingBytes >> 20) MiB without a complete fragment")
        }
        var progress = Progress()
        while let (type, size) = try nextBox(at: readOffset) {
            let at = readOffset
            switch type {
            case "ftyp":
                ftyp = Array(pending[at..<(at + size)])
                readOffset += size
            case "moov":
                let segment = ftyp + pending[at..<(at + size)]
                readOffset += size
                if segment != initBytes { try start(segment, sink: sink, run: run) }
            case "moof":
                // The fragment is the moof and the mdat right after it.
                guard let mdat = try nextBox(at: at + size, headerOnly: true) else { return progress }
                guard mdat.type == "mdat" else { throw CMAFInputError("a moof not followed by its mdat") }
                guard pending.count - at >= size + mdat.size else { return progress }
                let fragment = Bytes(pending[at..<(at + size + mdat.size)])
                readOffset += size + mdat.size
                try publish(fragment, progress: &progress)
            default:
                readOffset += size  // styp, sidx, prft, free…: nothing to publish
            }
        }
        return progress
    }

    /// Ends every track (EOS).
    func finish() {
        for (id, var output) in outputs {
            output.group?.finish()
            output.group = nil
            output.producer.finish()
            outputs[id] = output
        }
    }

    // MARK: Private

    private func start(_ segment: [UInt8], sink: MoqSink, run: MoqSink.Running) throws(CMAFInputError) {
        let parsed: CMAFInit
        do { parsed = try CMAFInit(Bytes(segment)) } catch { throw CMAFInputError("\(error)") }
        finish()
        for name in trackNames { sink.updateCatalog(track: name, config: nil) }
        outputs = [:]
        trackNames = []
        cmafInit = parsed
        initBytes = segment
        for track in parsed.tracks where track.isVideo || track.isAudio {
            guard let own = parsed.segment(forTrack: track.trackID) else { continue }
            let rendition: MediaRendition
            do { rendition = try MediaFormat.rendition(forCMAF: track, initSegment: own) } catch {
                throw CMAFInputError("track \(track.trackID) of the MP4: \(error)")
            }
            let name =
                parsed.tracks.count == 1 && padTrackName != nil
                ? padTrackName! : "\(padIndex).\(track.trackID).m4s"
            let info = TrackInfo(
                priority: track.isVideo ? 60 : 80, maxAgeMs: sink.cacheDurationMs, timescale: 1_000_000)
            outputs[track.trackID] = Output(
                name: name, track: track, producer: run.broadcast.createTrack(name, info: info), group: nil)
            trackNames.append(name)
            sink.updateCatalog(track: name, config: rendition.config)
            sink.reporter.log(GST_LEVEL_INFO, "publishing \(name) (\(rendition.codec), CMAF)")
        }
        guard !outputs.isEmpty else { throw CMAFInputError("the MP4 has no audio or video track") }
    }

    private func publish(_ fragment: Bytes, progress: inout Progress) throws(CMAFInputError) {
        guard let cmafInit else { throw CMAFInputError("a fragment before the init segment (ftyp, moov)") }
        let samples: [CMAFSample]
        do {
            samples = try CMAFFragment.samples(in: fragment, tracks: cmafInit.tracks, nextDecodeTime: &decodeTimes)
        } catch {
            throw CMAFInputError("\(error)")
        }
        for sample in samples {
            guard var output = outputs[sample.trackID] else { continue }
            sequence &+= 1
            let frame = CMAFFragment.fragment(sample, sequence: sequence)
            let micros = sample.presentationMicros(timescale: output.track.timescale)
            if output.track.isVideo {
                if sample.isSync {
                    output.group?.finish()
                    output.group = output.producer.appendGroup()
                    progress.groups += 1
                } else if output.group == nil {
                    progress.dropped += 1  // waiting for the first keyframe
                    continue
                }
                _ = output.group?.write(frame, timestamp: micros)
            } else {
                _ = output.producer.writeSingleFrameGroup(frame, timestamp: micros)
                progress.groups += 1
            }
            outputs[sample.trackID] = output
            progress.frames += 1
            progress.bytes += frame.count
        }
    }

    /// The type and size of the box at `offset` of `pending`: nil until it has arrived whole (or,
    /// with `headerOnly`, until its header has).
    /// - Throws: for a size that cannot be streamed (0: "to the end of the file") or is smaller
    ///   than the box's own header.
    private func nextBox(at offset: Int, headerOnly: Bool = false) throws(CMAFInputError) -> (type: String, size: Int)?
    {
        guard pending.count >= offset + 8 else { return nil }
        let b = pending[offset..<(offset + 8)].map { Int($0) }
        var size = b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]
        let type = String(decoding: pending[(offset + 4)..<(offset + 8)], as: UTF8.self)
        var header = 8
        if size == 1 {
            guard pending.count >= offset + 16 else { return nil }
            let wide = pending[(offset + 8)..<(offset + 16)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            size = wide > UInt64(Self.maxPendingBytes) ? Self.maxPendingBytes + 1 : Int(wide)
            header = 16
        }
        if size == 0 { throw CMAFInputError("a \(type) box of size 0 (to the end of the file) cannot be streamed") }
        guard size >= header else { throw CMAFInputError("a \(type) box of \(size) bytes cannot hold its header") }
        guard size <= Self.maxPendingBytes else {
            throw CMAFInputError("a \(type) box of \(size) bytes is larger than \(Self.maxPendingBytes >> 20) MiB")
        }
        if headerOnly { return (type, size) }
        return pending.count - offset >= size ? (type, size) : nil
    }
}

/// Why a fragmented MP4 input cannot be published (the element posts an error with it).
struct CMAFInputError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
