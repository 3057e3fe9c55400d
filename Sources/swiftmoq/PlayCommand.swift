// SPDX-License-Identifier: MIT
import Foundation
import MoqCommandLine
import MoqKit

/// `swiftmoq play`: plays a broadcast (MoqKit's Player on moqsrc) to a window, a file, or nowhere.
enum PlayCommand {
    static let usage = """
        usage: swiftmoq play --url URL (--broadcast B | --prefix P) [--record out.mkv] [--headless] [options]

        Plays a broadcast: video in a window and audio on the speakers (or --headless when there
        is no display; or --record to Matroska without re-encoding). With --prefix, plays the first
        broadcast announced under P and, when it ends, the next one. A live status line (bitrate,
        fps, latency, stalls) on a terminal; quiet when standard error is piped.

        \(ClientFlags.help)
          --broadcast B             the broadcast path
          --prefix P                instead: whatever is announced under P
          --record FILE             write a Matroska file instead of rendering
          --headless                render nowhere (still decoded, at real-time pace)
          --latency MS              a fixed target buffering (default: moqsrc's, which joins at the live
                                    edge and adds a jitter margin only when frames arrive late)
          --no-catch-up             after a stall, stay behind rather than drop frames to return to the
                                    live edge (always so with --record)
          --mpris                   answer media keys and desktop players: org.mpris.MediaPlayer2.swiftmoq
                                    on the D-Bus session bus (Play, Pause, PlayPause, Stop, Metadata)
          --long-form               long-form listening: play --buffer-duration behind the live edge,
                                    filled faster than real time, never skipping (outages shorter than
                                    the buffer are not heard)
          --buffer-duration S       the long-form buffer (default 30)
          --video-track T           a catalog video track (default: adaptive bitrate over a ladder,
                                    else the first playable; none: no video)
          --max-resolution WxH      adaptive bitrate chooses no rendition larger (e.g. 1280x720)
          --max-bitrate BPS         adaptive bitrate chooses no rendition dearer (bit/s)
          --no-abr                  play one rendition, whatever the path does
          --audio-track T           a catalog audio track (default: the first playable; none: no audio)
          --duration S              stop after S seconds
          --timeout S               how long to wait for a broadcast and its catalog (default 10)

        examples:
          swiftmoq play --url moql://localhost:4443/anon --tls-fingerprint $FP --broadcast room/cam
          swiftmoq play --url moql://relay.example/anon --prefix room --record room.mkv --duration 60
          swiftmoq play --url https://relay.example/anon --broadcast radio --long-form --buffer-duration 60
        """

    static func run(_ argv: [String]) async throws(CommandError) {
        let args: Arguments
        do {
            args = try Arguments(
                argv,
                options: ClientFlags.options.union([
                    "broadcast", "prefix", "record", "latency", "video-track", "audio-track", "duration", "timeout",
                    "buffer-duration", "max-resolution", "max-bitrate",
                ]),
                flags: ClientFlags.flags.union(["headless", "long-form", "mpris", "no-catch-up", "no-abr"]))
        } catch { throw .usage(error.description) }
        let broadcast = args.value("broadcast")
        let prefix = args.value("prefix")
        guard (broadcast == nil) != (prefix == nil) else { throw .usage("give either --broadcast or --prefix") }
        let latency: Int?
        let duration: Duration?
        let timeout: Duration
        let mode: PlaybackMode
        do throws(CommandFailure) {
            let buffer = try args.seconds("buffer-duration", default: .seconds(30))
            if args.value("buffer-duration") != nil && !args.has("long-form") {
                throw CommandFailure.usage("--buffer-duration goes with --long-form")
            }
            mode = args.has("long-form") ? .longForm(bufferDuration: buffer) : .live
            latency = args.value("latency") == nil ? nil : try args.integer("latency", default: 0)
            duration = args.value("duration") == nil ? nil : try args.seconds("duration", default: .zero)
            timeout = try args.seconds("timeout", default: .seconds(10))
        } catch { throw .usage(error.description) }
        let output: PlayerOutput
        if let path = args.value("record") {
            output = .file(path: path)
        } else if args.has("headless") {
            output = .headless
        } else if ProcessInfoDisplay.current == nil && getenv("WAYLAND_DISPLAY") == nil {
            Output.error("no display ($DISPLAY is not set): playing headless")
            output = .headless
        } else {
            output = .window
        }
        let flags = try SessionFlags(args)
        let session = try await flags.connect()
        let subscription: BroadcastSubscription
        do { subscription = try await session.subscribe(prefix: broadcast ?? prefix ?? "") } catch {
            throw .runtime(error.description)
        }
        let deadline = ContinuousClock.now + (duration ?? .seconds(365 * 86_400))
        let stop = StopSignal()
        let watch = SignalWatch([SIGINT, SIGTERM])
        let signals = Task {
            _ = await watch.next()
            stop.fire()
        }
        defer { signals.cancel() }
        var played = 0
        // Adaptive bitrate's caps (a small window, a metered link).
        var maxResolution: (width: Int, height: Int)?
        if let text = args.value("max-resolution") {
            let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2 else { throw .usage("--max-resolution takes WxH, e.g. 1280x720") }
            maxResolution = (parts[0], parts[1])
        }
        var maxBitrate: Int?
        if let text = args.value("max-bitrate") {
            guard let value = Int(text), value > 0 else { throw .usage("--max-bitrate takes bit/s, e.g. 2000000") }
            maxBitrate = value
        }
        let wanted = broadcast.map { $0.split(separator: "/").joined(separator: "/") }
        let queue = BroadcastQueue(subscription.broadcasts) { b in wanted == nil || b.absolutePath == wanted }
        while !stop.fired && ContinuousClock.now < deadline {
            let limit = played == 0 ? ContinuousClock.now + timeout : deadline
            var next: Broadcast?
            while next == nil && !stop.fired && ContinuousClock.now < limit && !queue.isFinished {
                next = queue.pop()
                if next == nil { try? await Task.sleep(for: .milliseconds(50)) }
            }
            guard let current = next else {
                if played == 0 && !stop.fired {
                    throw .runtime(
                        "\(broadcast.map { "broadcast \"\($0)\"" } ?? "no broadcast under \"\(prefix!)\"") "
                            + "was not announced by \(flags.url) within \(timeout)")
                }
                break
            }
            guard let catalog = await current.settledCatalog(timeout: timeout),
                !catalog.playableVideoTracks.isEmpty || !catalog.playableAudioTracks.isEmpty
            else {
                Output.error("\(current.absolutePath): no playable track in its catalog")
                continue
            }
            let player: Player
            do {
                player = try Player(
                    catalog: catalog, videoTrackName: args.value("video-track").flatMap { $0 == "none" ? nil : $0 },
                    audioTrackName: args.value("audio-track").flatMap { $0 == "none" ? nil : $0 },
                    targetBuffering: latency.map { .milliseconds($0) }, output: output, mode: mode,
                    catchUp: !args.has("no-catch-up"), abr: !args.has("no-abr"), maxResolution: maxResolution,
                    maxBitrate: maxBitrate)
                try await player.play()
                if args.has("mpris") { try player.publishMPRIS() }
            } catch { throw .runtime(error.description) }
            played += 1
            Output.info("playing \(current.absolutePath)")
            let ended = StopSignal()
            let events = Task {
                for await event in player.subscribeEvents() where event.name == .playbackEnd { ended.fire() }
            }
            let status = Task {
                for await stats in player.subscribeStats() {
                    StatusLine.update(
                        "▶ \(current.absolutePath)  \(StatusLine.rate((stats.videoBitrateKbps ?? 0 + (stats.audioBitrateKbps ?? 0)) * 1000))  "
                            + "\(Int(stats.videoFps ?? 0)) fps  latency \(StatusLine.ms(stats.videoLatency ?? stats.audioLatency))  "
                            + "stalls \(stats.videoStalls.count + stats.audioStalls.count)  dropped \(stats.videoFramesDropped + stats.audioFramesDropped)"
                    )
                }
            }
            while !stop.fired && !ended.fired && !current.hasEnded && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(100))
            }
            status.cancel()
            events.cancel()
            await player.stop()
            StatusLine.finish()
            if current.hasEnded { Output.error("\(current.absolutePath) ended") }
            if broadcast != nil { break }
        }
        subscription.cancel()
        await session.close()
    }

}

/// Broadcasts taken from a subscription as they are announced, for a polling loop.
final class BroadcastQueue: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Broadcast] = []
    private var finished = false
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<Broadcast>, matching: @escaping @Sendable (Broadcast) -> Bool) {
        task = Task { [weak self] in
            for await b in stream where matching(b) { self?.lock.withLock { self?.items.append(b) } }
            self?.lock.withLock { self?.finished = true }
        }
    }

    deinit { task?.cancel() }

    func pop() -> Broadcast? { lock.withLock { items.isEmpty ? nil : items.removeFirst() } }
    var isFinished: Bool { lock.withLock { finished && items.isEmpty } }
}

/// A one-way flag set from a signal handler or a task.
final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func fire() { lock.withLock { value = true } }
    var fired: Bool { lock.withLock { value } }
}
