// SPDX-License-Identifier: MIT

/// Where a ``Player``'s audio goes; ``Player/switchAudioOutput(to:)`` changes it while playing.
public enum AudioOutput: Sendable {
    /// The system's default output (`autoaudiosink`).
    case system
    /// A PulseAudio (or PipeWire) sink by name (`pulsesink device=…`).
    case pulseDevice(String)
    /// An ALSA device (`alsasink device=hw:1`).
    case alsaDevice(String)
    /// Any sink, as a gst-launch description (`"fakesink sync=true"`).
    case element(String)
    /// Interleaved F32 PCM to the app, as it is rendered.
    case callback(@Sendable (AudioSamples) -> Void)

    /// The sink's gst-launch description, its appsink (if any) named `tap`.
    func description(tap: String) -> String {
        switch self {
        case .system: "autoaudiosink"
        case .pulseDevice(let device): "pulsesink device=\"\(device)\""
        case .alsaDevice(let device): "alsasink device=\"\(device)\""
        case .element(let text): text
        case .callback:
            "capsfilter caps=audio/x-raw,format=F32LE,layout=interleaved ! appsink name=\(tap) sync=true max-buffers=16 drop=true"
        }
    }
}
