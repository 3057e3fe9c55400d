// SPDX-License-Identifier: MIT

/// How a ``Player`` buffers.
public enum PlaybackMode: Sendable, Equatable {
    /// At the live edge, `targetBuffering` behind it; late groups are skipped. ``Player/pause()``
    /// stops the pipeline and ``Player/play()`` resumes at the live edge (moq-kit's behaviour).
    case live
    /// Long-form listening (AirPlay's enhanced buffering, on MoQ): `bufferDuration` behind the
    /// live edge (or from a finished broadcast's start), filled faster than real time from the
    /// relay's cache, every frame played, so that an outage shorter than what is buffered is
    /// not heard. ``Player/pause()`` pauses the pipeline without closing anything and
    /// ``Player/play()`` resumes where it paused.
    case longForm(bufferDuration: Duration = .seconds(30))

    /// moqsrc's `buffering` and `buffer-duration` for this mode.
    var elementProperties: [(String, String)] {
        switch self {
        case .live: [("buffering", "live")]
        case .longForm(let duration):
            [("buffering", "long-form"), ("buffer-duration", String(max(1000, Player.ms(duration))))]
        }
    }
}
