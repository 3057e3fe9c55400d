# SPDX-License-Identifier: MIT
"""What `make bench` runs and for how long: defaults sized for a 2-core machine and ≤ ~10 minutes,
each overridable through the environment."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field


def _env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


ALL_CASES = "latency,throughput,webtransport,websocket,ietf,openloop,fanout,cluster,gst,ttff,glass,join,ladder,longform,memory"


@dataclass
class Config:
    cases: list[str] = field(default_factory=lambda: _env_list("BENCH_CASES", ALL_CASES))
    # Before each run: wait up to this long for other processes to leave the CPU idle (--no-wait: 0).
    idle_timeout_s: float = field(default_factory=lambda: _env_float("BENCH_IDLE_TIMEOUT", 180))
    # 1. Transport latency: 1 KB frames at 100 fps.
    latency_seconds: float = field(default_factory=lambda: _env_float("BENCH_SECONDS", 10))
    latency_fps: float = field(default_factory=lambda: _env_float("BENCH_LATENCY_FPS", 100))
    latency_frame_size: int = field(default_factory=lambda: _env_int("BENCH_LATENCY_FRAME_SIZE", 1000))
    latency_frames_per_group: int = field(default_factory=lambda: _env_int("BENCH_LATENCY_FRAMES_PER_GROUP", 1))
    latency_warmup_s: float = field(default_factory=lambda: _env_float("BENCH_WARMUP_SECONDS", 1))
    # 2. Throughput: 100 KB frames, as fast as acknowledgements allow.
    throughput_seconds: float = field(default_factory=lambda: _env_float("BENCH_THROUGHPUT_SECONDS", 6))
    throughput_frame_size: int = field(default_factory=lambda: _env_int("BENCH_THROUGHPUT_FRAME_SIZE", 100_000))
    throughput_frames_per_group: int = field(default_factory=lambda: _env_int("BENCH_THROUGHPUT_FRAMES_PER_GROUP", 30))
    throughput_window: int = field(default_factory=lambda: _env_int("BENCH_THROUGHPUT_WINDOW", 64))
    # Each combination runs this many times, interleaved, and reports the median (the box is shared).
    throughput_repeats: int = field(default_factory=lambda: _env_int("BENCH_THROUGHPUT_REPEATS", 3))
    # 2b. Open loop: an unthrottled publisher of 100 KB single-frame groups, a subscriber with a budget.
    openloop_groups: int = field(default_factory=lambda: _env_int("BENCH_OPENLOOP_GROUPS", 1500))
    openloop_frame_size: int = field(default_factory=lambda: _env_int("BENCH_OPENLOOP_FRAME_SIZE", 100_000))
    openloop_latency_ms: int = field(default_factory=lambda: _env_int("BENCH_OPENLOOP_LATENCY_MS", 10_000))
    openloop_repeats: int = field(default_factory=lambda: _env_int("BENCH_OPENLOOP_REPEATS", 3))
    # 3. Fan-out: one 4 Mbit/s broadcast to N subscribers in one load-generator process.
    fanout_seconds: float = field(default_factory=lambda: _env_float("BENCH_FANOUT_SECONDS", 10))
    fanout_counts: list[int] = field(
        default_factory=lambda: [int(n) for n in _env_list("BENCH_FANOUT_COUNTS", "50,100,200,400")]
    )
    fanout_bitrate_bps: int = field(default_factory=lambda: _env_int("BENCH_FANOUT_BITRATE", 2_000_000))
    fanout_fps: int = field(default_factory=lambda: _env_int("BENCH_FANOUT_FPS", 30))
    # The Swift relay's event loops (`--threads`) the fan-out runs with, each a row of its own.
    fanout_loops: list[int] = field(default_factory=lambda: [int(n) for n in _env_list("BENCH_FANOUT_LOOPS", "1,2")])
    # The load generator's network threads: the measuring equipment must not be the serial stage
    # (400 viewers read by one thread took longer per frame than the relay took to send them).
    fanout_load_threads: int = field(default_factory=lambda: _env_int("BENCH_FANOUT_LOAD_THREADS", 2))
    # 3b. Cluster: the fan-out's broadcast published on one Swift relay, watched on another linked to it.
    cluster_counts: list[int] = field(
        default_factory=lambda: [int(n) for n in _env_list("BENCH_CLUSTER_COUNTS", "200")]
    )
    # 4. GStreamer path: 1080p30 H.264 (x264enc ultrafast) through appsrc ! moqsink → moqsrc ! appsink.
    gst_seconds: float = field(default_factory=lambda: _env_float("BENCH_GST_SECONDS", 10))
    gst_bitrate_kbps: int = field(default_factory=lambda: _env_int("BENCH_GST_BITRATE_KBPS", 4000))
    # 4d. Glass-to-glass: moqsrc's latency values to run with ("default": the element's own, adaptive;
    # "fixed-N": latency-mode=fixed latency=N, the default before issue #16).
    glass_latencies: list[str] = field(default_factory=lambda: _env_list("BENCH_GLASS_LATENCIES", "default,fixed-100"))
    glass_seconds: float = field(default_factory=lambda: _env_float("BENCH_GLASS_SECONDS", 10))
    # 4c. Time to first frame: new players of a running 1080p30 broadcast, one after another.
    ttff_runs: int = field(default_factory=lambda: _env_int("BENCH_TTFF_RUNS", 10))
    # 4e. Joining viewers: GOP lengths (s), viewers per GOP (each at a random point of it), their playing
    # time, the sound card buffer of the audio viewers (ms), and the stall runs' blackhole and delay spike (s).
    join_gops: str = field(default_factory=lambda: os.environ.get("BENCH_JOIN_GOPS", "1,2"))
    join_count: int = field(default_factory=lambda: _env_int("BENCH_JOIN_COUNT", 20))
    join_watch_s: float = field(default_factory=lambda: _env_float("BENCH_JOIN_WATCH_S", 3))
    join_audio_buffer_ms: int = field(default_factory=lambda: _env_int("BENCH_JOIN_AUDIO_BUFFER_MS", 40))
    join_stall_s: float = field(default_factory=lambda: _env_float("BENCH_JOIN_STALL_S", 1))
    # 4f. Adaptive bitrate: a ladder (kbit/s, highest first) through a cap that changes (kbit/s per phase,
    # and each phase's seconds), beside moq-dev's subscriber at these fixed renditions (bitrates of the ladder).
    ladder_kbps: str = field(default_factory=lambda: os.environ.get("BENCH_LADDER_KBPS", "3500,1200,400"))
    ladder_caps: str = field(default_factory=lambda: os.environ.get("BENCH_LADDER_CAPS", "6000,1500,6000"))
    ladder_phase_s: str = field(default_factory=lambda: os.environ.get("BENCH_LADDER_PHASE_S", "8,12,12"))
    ladder_fixed: str = field(default_factory=lambda: os.environ.get("BENCH_LADDER_FIXED", "3500,1200"))
    # 4b. Long-form listening: moqsrc buffering=long-form beside live playback of one Opus broadcast.
    longform_buffer_s: float = field(default_factory=lambda: _env_float("BENCH_LONGFORM_BUFFER_S", 15))
    longform_outages: str = field(default_factory=lambda: os.environ.get("BENCH_LONGFORM_OUTAGES", "3,6,9,12,14"))
    longform_live_outages: str = field(
        default_factory=lambda: os.environ.get("BENCH_LONGFORM_LIVE_OUTAGES", "0.1,0.2,0.5,1")
    )
    # 5. Memory: RSS over many groups.
    memory_groups: int = field(default_factory=lambda: _env_int("BENCH_MEMORY_GROUPS", 50_000))
    memory_warmup_groups: int = field(default_factory=lambda: _env_int("BENCH_MEMORY_WARMUP_GROUPS", 5_000))
    memory_rate: float = field(default_factory=lambda: _env_float("BENCH_MEMORY_RATE", 1000))
    memory_sample_every: int = field(default_factory=lambda: _env_int("BENCH_MEMORY_SAMPLE_EVERY", 5_000))
    memory_max_age_ms: int = field(default_factory=lambda: _env_int("BENCH_MEMORY_MAX_AGE_MS", 1000))

    @property
    def fanout_frame_size(self) -> int:
        return round(self.fanout_bitrate_bps / 8 / self.fanout_fps)

    def as_dict(self) -> dict:
        return asdict(self)
