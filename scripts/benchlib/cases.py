# SPDX-License-Identifier: MIT
"""The five cases. Each run starts a fresh relay, its clients, measures, and stops everything."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time
from pathlib import Path

from .config import Config
from .processes import BenchFailure, Child, CPUWindow, wait_until_idle
from .roles import STACKS, Tools, broadcast_name, start_client, start_relay
from .stats import latency_summary


@contextlib.contextmanager
def stopping(*children: Child | None):
    """Stops the given children (last first) when the block ends, however it ends."""
    try:
        yield
    finally:
        for child in reversed(children):
            if child is not None:
                child.stop()


class GoSignal:
    """The start signal: a file the publisher waits for, and optionally the ack FIFO of case 2.

    The FIFO is held open read-write here for the whole run, so neither end ever blocks in open()
    and the subscriber never gets SIGPIPE when the publisher leaves first.
    """

    def __init__(self, with_fifo: bool) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="moqbench-")
        self.go_file = Path(self._dir.name) / "go"
        self.fifo: Path | None = None
        self._fd: int | None = None
        if with_fifo:
            self.fifo = Path(self._dir.name) / "acks"
            os.mkfifo(self.fifo)
            self._fd = os.open(self.fifo, os.O_RDWR | os.O_NONBLOCK)

    def go(self) -> None:
        self.go_file.touch()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._dir.cleanup()


def stream_run(
    tools: Tools,
    log,
    case: str,
    relay_stack: str,
    client_stack: str,
    publish: dict,
    subscribe: dict,
    timeout: float,
    with_fifo: bool = False,
    idle_timeout_s: float = 180,
    webtransport: bool = False,
    websocket: str = "",
    publisher_stack: str | None = None,
    subscriber_stack: str | None = None,
) -> dict:
    """One publisher → relay → one subscriber run; returns both results and the CPU of each process.
    `publisher_stack`/`subscriber_stack` override `client_stack` for one side (the IETF case mixes them).
    With `webtransport` both clients dial `https://` (WebTransport over HTTP/3) instead of `moql://`;
    with `websocket` "ws" or "wss", `ws://` or `wss://` (moq-lite over qmux over WebSocket, on the
    relay's TCP port; wss pinned to the relay's certificate like every client here)."""
    pub_stack = publisher_stack or client_stack
    sub_stack = subscriber_stack or client_stack
    tag = f"{case}-{relay_stack}relay-{client_stack}clients"
    path = broadcast_name(case)
    idle = wait_until_idle(log, timeout=idle_timeout_s)
    signal = GoSignal(with_fifo)
    relay = start_relay(tools, relay_stack, f"{tag}-relay")
    dial = dataclasses.replace(relay, url=relay.url.replace("moql://", "https://", 1)) if webtransport else relay
    if websocket:
        dial = dataclasses.replace(relay, url=relay.url.replace("moql://", f"{websocket}://", 1))
        if client_stack == "rust":  # moq-dev's client dials ws:// over WebSocket only when it is enabled
            publish = {**publish, "websocket-delay-ms": 0}
            subscribe = {**subscribe, "websocket-delay-ms": 0}
    publisher = subscriber = None
    try:
        with stopping(relay.child):
            fifo = str(signal.fifo) if signal.fifo else None
            pub_options = {"broadcast": path, "go-file": str(signal.go_file), "ack-fifo": fifo, **publish}
            publisher = start_client(tools, pub_stack, "publish", f"{tag}-publisher", dial, pub_options)
            with stopping(publisher):
                publisher.wait_event("announced", 30)
                sub_options = {"broadcast": path, "ack-fifo": fifo, **subscribe}
                subscriber = start_client(tools, sub_stack, "subscribe", f"{tag}-subscriber", dial, sub_options)
                with stopping(subscriber):
                    subscriber.wait_event("subscribed", 30)
                    time.sleep(0.5)  # the subscription reaches the relay and the relay's upstream one the publisher
                    cpu = CPUWindow({"relay": relay.child, "publisher": publisher, "subscriber": subscriber})
                    cpu.start()
                    signal.go()
                    published = publisher.wait_event("result", timeout)
                    received = subscriber.wait_event("result", timeout)
                    cpu_percent = cpu.stop()
                    relay_rss_kib = relay.child.rss_kib()
                    publisher.wait_event("done", 15)
    finally:
        signal.close()
    return {"relay": relay_stack, "clients": client_stack, "published": published, "received": received,
            "cpu_percent": cpu_percent, "busy_before_percent": idle, "relay_rss_kib": relay_rss_kib}


def run_latency(
    tools: Tools, cfg: Config, log, webtransport: bool = False, websocket: str = ""
) -> list[dict]:
    """Case 1: 1 KB frames at 100 fps for ~10 s, each relay with each client pair (over WebSocket: the
    Swift relay only, moq-dev's relay serves WebSocket but its PyPI build does not listen on TCP)."""
    rows = []
    frames = int(cfg.latency_seconds * cfg.latency_fps)
    warmup = int(cfg.latency_warmup_s * cfg.latency_fps)
    over = " over WebTransport" if webtransport else f" over WebSocket ({websocket}://)" if websocket else ""
    for relay_stack in (("swift",) if websocket else STACKS):
        for client_stack in STACKS:
            log(f"latency{over}: {relay_stack} relay, {client_stack} publisher + subscriber ({cfg.latency_seconds:g} s)")
            run = stream_run(
                tools, log, "latency", relay_stack, client_stack,
                publish={"frame-size": cfg.latency_frame_size, "fps": cfg.latency_fps,
                         "frames-per-group": cfg.latency_frames_per_group, "frames": frames},
                subscribe={"frames": frames, "warmup-frames": warmup, "deadline-s": cfg.latency_seconds + 30},
                timeout=cfg.latency_seconds + 60, idle_timeout_s=cfg.idle_timeout_s, webtransport=webtransport,
                websocket=websocket,
            )
            received, published = run["received"], run["published"]
            rows.append({
                "relay": relay_stack, "clients": client_stack,
                "sent": published["sent"], "received": received["frames"],
                "lost": published["sent"] - received["frames"],
                **latency_summary(received["latencies_us"]),
                "cpu_percent": run["cpu_percent"], "busy_before_percent": run["busy_before_percent"],
                "latencies_us": received["latencies_us"],  # in arrival order, after the warm-up
            })
    return rows


def run_webtransport(tools: Tools, cfg: Config, log) -> dict:
    """Case 1b/2c: cases 1 and 2 again with every client on `https://` (WebTransport over HTTP/3 on the
    relay's same UDP port), one throughput run per pair; the report sets them beside the raw QUIC rows."""
    latency = run_latency(tools, cfg, log, webtransport=True)
    for row in latency:
        row.pop("latencies_us", None)
    throughput = []
    for relay_stack in STACKS:
        for client_stack in STACKS:
            log(f"throughput over WebTransport: {relay_stack} relay, {client_stack} clients "
                f"({cfg.throughput_seconds:g} s)")
            throughput.append(_throughput_run(tools, cfg, log, relay_stack, client_stack, webtransport=True))
    return {"latency": latency, "throughput": throughput}


def run_websocket(tools: Tools, cfg: Config, log) -> dict:
    """Case 1c/2d: cases 1 and 2 with every client on `ws://`, then on `wss://` (moq-lite over qmux over
    WebSocket on the Swift relay's TCP port, plain and over TLS: where UDP is blocked), one throughput
    run per client stack; the report sets them beside the raw QUIC rows of the Swift relay."""
    out: dict = {}
    for scheme in ("ws", "wss"):
        latency = run_latency(tools, cfg, log, websocket=scheme)
        for row in latency:
            row.pop("latencies_us", None)
            row["scheme"] = scheme
        throughput = []
        for client_stack in STACKS:
            log(f"throughput over WebSocket ({scheme}://): swift relay, {client_stack} clients "
                f"({cfg.throughput_seconds:g} s)")
            run = _throughput_run(tools, cfg, log, "swift", client_stack, websocket=scheme)
            throughput.append({**run, "scheme": scheme})
        out.setdefault("latency", []).extend(latency)
        out.setdefault("throughput", []).extend(throughput)
    return out


# The IETF case's legs, all through moq-dev's relay (the one here that speaks both families; it bridges
# them): (label, publisher stack, its protocol, subscriber stack, its protocol). moq-dev's clients
# always negotiate moq-lite with its relay (its preference), so the Rust legs are moq-lite.
IETF_LEGS = (
    ("moq-lite", "swift", "moq-lite", "swift", "moq-lite"),
    ("ietf-16", "swift", "ietf-16", "swift", "ietf-16"),
    ("ietf-14", "swift", "ietf-14", "swift", "ietf-14"),
    ("ietf-16 → moq-lite", "swift", "ietf-16", "rust", "moq-lite"),
    ("moq-lite → ietf-16", "rust", "moq-lite", "swift", "ietf-16"),
    ("rust moq-lite", "rust", "moq-lite", "rust", "moq-lite"),
)


def run_ietf(tools: Tools, cfg: Config, log) -> dict:
    """Case 1d/2e: cases 1 and 2 over IETF MoQ Transport (drafts 16 and 14) beside moq-lite, through
    moq-dev's relay: Swift clients on each protocol, the two families bridged by the relay in both
    directions (a Swift IETF publisher read by a Rust moq-lite subscriber and the reverse), and the
    Rust stack on moq-lite as the reference. One throughput run per leg."""
    frames = int(cfg.latency_seconds * cfg.latency_fps)
    warmup = int(cfg.latency_warmup_s * cfg.latency_fps)
    latency, throughput = [], []
    for label, pub_stack, pub_proto, sub_stack, sub_proto in IETF_LEGS:
        def options(stack: str, proto: str, extra: dict) -> dict:
            return {**extra, "protocol": proto} if stack == "swift" else extra
        log(f"IETF latency: {label} ({pub_stack} publisher, {sub_stack} subscriber, rust relay)")
        run = stream_run(
            tools, log, "ietf-latency", "rust", pub_stack if pub_stack == sub_stack else "mixed",
            publish=options(pub_stack, pub_proto, {"frame-size": cfg.latency_frame_size, "fps": cfg.latency_fps,
                                                   "frames-per-group": cfg.latency_frames_per_group,
                                                   "frames": frames}),
            subscribe=options(sub_stack, sub_proto, {"frames": frames, "warmup-frames": warmup,
                                                     "deadline-s": cfg.latency_seconds + 30}),
            timeout=cfg.latency_seconds + 60, idle_timeout_s=cfg.idle_timeout_s,
            publisher_stack=pub_stack, subscriber_stack=sub_stack,
        )
        received, published = run["received"], run["published"]
        latency.append({
            "leg": label, "publisher": f"{pub_stack} {pub_proto}", "subscriber": f"{sub_stack} {sub_proto}",
            "sent": published["sent"], "received": received["frames"],
            "lost": published["sent"] - received["frames"], **latency_summary(received["latencies_us"]),
            "cpu_percent": run["cpu_percent"], "busy_before_percent": run["busy_before_percent"],
        })
        log(f"IETF throughput: {label} ({cfg.throughput_seconds:g} s)")
        run = _throughput_run(
            tools, cfg, log, "rust", pub_stack if pub_stack == sub_stack else "mixed",
            publish_extra=options(pub_stack, pub_proto, {}), subscribe_extra=options(sub_stack, sub_proto, {}),
            publisher_stack=pub_stack, subscriber_stack=sub_stack)
        throughput.append({"leg": label, **run})
    return {"latency": latency, "throughput": throughput}


def _repeated_pairs(repeats: int, label, run) -> dict[tuple[str, str], list[dict]]:
    """Every (relay, clients) pair, `repeats` times, interleaved (the box is shared: a busy moment
    then hits every pair alike); `label(relay, clients, repeat)` says what runs."""
    runs: dict[tuple[str, str], list[dict]] = {}
    for repeat in range(repeats):
        for relay_stack in STACKS:
            for client_stack in STACKS:
                label(relay_stack, client_stack, repeat)
                runs.setdefault((relay_stack, client_stack), []).append(run(relay_stack, client_stack))
    return runs


def _median(runs: list[dict], key: str) -> dict:
    return sorted(runs, key=lambda r: r[key])[len(runs) // 2]


def run_throughput(tools: Tools, cfg: Config, log) -> list[dict]:
    """Case 2: 100 KB frames as fast as the subscriber acknowledges, each relay with each client pair,
    repeated (interleaved) and summarised by the median run."""
    runs = _repeated_pairs(
        cfg.throughput_repeats,
        lambda relay, clients, n: log(f"throughput: {relay} relay, {clients} clients ({cfg.throughput_seconds:g} s, "
                                      f"run {n + 1}/{cfg.throughput_repeats})"),
        lambda relay, clients: _throughput_run(tools, cfg, log, relay, clients))
    return [{**_median(mine, "mb_per_s"), "runs_mb_per_s": [r["mb_per_s"] for r in mine],
             "lost": sum(r["lost"] for r in mine), "stalled": any(r["stalled"] for r in mine)}
            for mine in runs.values()]


def _throughput_run(
    tools: Tools, cfg: Config, log, relay_stack: str, client_stack: str, webtransport: bool = False,
    websocket: str = "", publish_extra: dict | None = None, subscribe_extra: dict | None = None,
    publisher_stack: str | None = None, subscriber_stack: str | None = None,
) -> dict:
    """One case-2 run; `*_extra` add role options (e.g. `protocol`), `*_stack` override `client_stack` for one side."""
    run = stream_run(
        tools, log, "throughput", relay_stack, client_stack,
        publish={"frame-size": cfg.throughput_frame_size, "fps": 0, "seconds": cfg.throughput_seconds,
                 "frames-per-group": cfg.throughput_frames_per_group, "window": cfg.throughput_window,
                 **(publish_extra or {})},
        subscribe={"warmup-frames": 1 << 62, "deadline-s": cfg.throughput_seconds + 30, **(subscribe_extra or {})},
        timeout=cfg.throughput_seconds + 60, with_fifo=True, idle_timeout_s=cfg.idle_timeout_s,
        webtransport=webtransport, websocket=websocket,
        publisher_stack=publisher_stack, subscriber_stack=subscriber_stack,
    )
    received, published = run["received"], run["published"]
    span_ns = max(1, received["last_ns"] - received["first_ns"])
    mb_per_s = round(received["bytes"] / span_ns * 1e3, 1)
    relay_cpu = run["cpu_percent"]["relay"]
    return {
        "relay": relay_stack, "clients": client_stack,
        "sent": published["sent"], "received": received["frames"],
        "lost": published["sent"] - received["frames"], "stalled": published["stalled"],
        "end": received.get("end"), "mb_per_s": mb_per_s,
        # What the relay moves per CPU-second it uses: less sensitive to a busy neighbour than MB/s.
        "mb_per_relay_cpu_s": round(mb_per_s / (relay_cpu / 100), 1) if relay_cpu > 0 else float("nan"),
        "cpu_percent": run["cpu_percent"], "busy_before_percent": run["busy_before_percent"],
    }


def run_openloop(tools: Tools, cfg: Config, log) -> list[dict]:
    """Case 2b: a publisher that writes 100 KB single-frame groups as fast as it can (no window:
    faster than any subscriber), one subscriber with a latency budget, each relay with each client
    pair, repeated (interleaved) and summarised by the median run. What users do; the closed loop of
    case 2 never overloads anyone. Delivered share, order, whether the subscriber's session survived,
    and the relay's cost."""
    runs = _repeated_pairs(
        cfg.openloop_repeats,
        lambda relay, clients, n: log(f"open loop: {relay} relay, {clients} clients ({cfg.openloop_groups} groups "
                                      f"of {cfg.openloop_frame_size // 1000} KB, run {n + 1}/{cfg.openloop_repeats})"),
        lambda relay, clients: _openloop_run(tools, cfg, log, relay, clients))
    return [{**_median(mine, "delivered_percent"), "runs_delivered_percent": [r["delivered_percent"] for r in mine],
             "out_of_order": sum(r["out_of_order"] for r in mine),
             "session_kept": all(r["session_kept"] for r in mine)}
            for mine in runs.values()]


def _openloop_run(tools: Tools, cfg: Config, log, relay_stack: str, client_stack: str) -> dict:
    run = stream_run(
        tools, log, "openloop", relay_stack, client_stack,
        publish={"frame-size": cfg.openloop_frame_size, "fps": 0, "window": 0,
                 "frames": cfg.openloop_groups, "frames-per-group": 1, "max-age-ms": 30_000},
        subscribe={"max-latency-ms": cfg.openloop_latency_ms, "warmup-frames": 1 << 62, "deadline-s": 60},
        timeout=90, idle_timeout_s=cfg.idle_timeout_s,
    )
    received, published = run["received"], run["published"]
    # From the first write to the last arrival (one machine, one CLOCK_MONOTONIC): what was
    # delivered, per second of the whole transfer (arrival bursts make the receive span alone lie).
    span_ns = max(1, received["last_ns"] - published["first_ns"])
    write_ns = max(1, published["last_ns"] - published["first_ns"])
    return {
        "relay": relay_stack, "clients": client_stack, "sent": published["sent"],
        "received": received["frames"],
        "delivered_percent": round(100 * received["frames"] / max(1, published["sent"]), 1),
        "out_of_order": received["out_of_order"], "group_errors": received.get("group_errors", 0),
        "end": received.get("end"),
        "session_kept": received.get("end") in ("track ended", "frame limit"),
        "publish_mb_per_s": round(published["bytes"] / write_ns * 1e3, 1),
        "mb_per_s": round(received["bytes"] / span_ns * 1e3, 1),
        "transfer_s": round(span_ns / 1e9, 2),
        "relay_rss_mb": round(run["relay_rss_kib"] / 1024, 1) if run["relay_rss_kib"] > 0 else float("nan"),
        "cpu_percent": run["cpu_percent"], "busy_before_percent": run["busy_before_percent"],
    }


def run_fanout(tools: Tools, cfg: Config, log) -> list[dict]:
    """Case 3: one 2 Mbit/s broadcast to N subscribers (one Swift load-generator process) per relay;
    the Swift relay once per event-loop count of `fanout_loops`."""
    rows = []
    frames = int(cfg.fanout_seconds * cfg.fanout_fps)
    for sessions in cfg.fanout_counts:
        for loops in cfg.fanout_loops:
            log(f"fan-out: swift relay ({loops} loop(s)), {sessions} subscribers ({cfg.fanout_seconds:g} s)")
            rows.append(_fanout_run(tools, cfg, log, "swift", sessions, frames, loops=loops))
        log(f"fan-out: rust relay, {sessions} subscribers ({cfg.fanout_seconds:g} s)")
        rows.append(_fanout_run(tools, cfg, log, "rust", sessions, frames))
    return rows


def run_cluster(tools: Tools, cfg: Config, log) -> list[dict]:
    """Case 3b: the fan-out's broadcast published on Swift relay S1 and watched by N subscribers on
    Swift relay S2, linked to S1 as moq-relay's cluster peers are, beside the same on one relay."""
    rows = []
    frames = int(cfg.fanout_seconds * cfg.fanout_fps)
    for sessions in cfg.cluster_counts:
        for cluster in (False, True):
            where = "S1 → S2" if cluster else "one relay"
            log(f"cluster: {where}, {sessions} subscribers ({cfg.fanout_seconds:g} s)")
            rows.append(_fanout_run(tools, cfg, log, "swift", sessions, frames, cluster=cluster))
    return rows


def _fanout_run(
    tools: Tools, cfg: Config, log, relay_stack: str, sessions: int, frames: int, loops: int = 1,
    cluster: bool = False,
) -> dict:
    tag = f"fanout-{relay_stack}relay-{sessions}-{loops}loops{'-cluster' if cluster else ''}"
    path = broadcast_name("fanout")
    idle = wait_until_idle(log, timeout=cfg.idle_timeout_s)
    signal = GoSignal(False)
    threads = ["--threads", str(loops)] if relay_stack == "swift" else None
    relay = start_relay(tools, relay_stack, f"{tag}-relay", threads)
    # In a cluster the subscribers are on a second relay, linked to the first (the publisher's).
    edge = (start_relay(tools, "swift", f"{tag}-edge", [
        *threads, "--cluster-connect", relay.url, "--upstream-tls-fingerprint", relay.fingerprint,
    ]) if cluster else None)
    try:
        with stopping(relay.child, edge.child if edge else None):
            publisher = start_client(tools, "swift", "publish", f"{tag}-publisher", relay, {
                "broadcast": path, "go-file": str(signal.go_file), "frame-size": cfg.fanout_frame_size,
                "fps": cfg.fanout_fps, "frames-per-group": cfg.fanout_fps, "frames": frames,
            })
            with stopping(publisher):
                publisher.wait_event("announced", 30)
                relay_base_kib = relay.child.rss_kib()  # the relay with the publisher, before any subscriber
                load = start_client(tools, "swift", "fanout-subscribers", f"{tag}-subscribers", edge or relay, {
                    "broadcast": path, "sessions": sessions, "frames": frames, "warmup-frames": cfg.fanout_fps,
                    "deadline-s": cfg.fanout_seconds + 20, "threads": cfg.fanout_load_threads,
                })
                with stopping(load):
                    ready = load.wait_event("ready", 120)
                    time.sleep(1.0)
                    watched = {"relay": relay.child, "publisher": publisher, "subscribers": load}
                    if edge:
                        watched["edge"] = edge.child
                    cpu = CPUWindow(watched)
                    cpu.start()
                    signal.go()
                    published = publisher.wait_event("result", cfg.fanout_seconds + 60)
                    cpu_percent = cpu.stop()  # the relay's CPU while the broadcast ran
                    relay_loaded_kib = relay.child.rss_kib()  # every subscriber connected, the broadcast sent
                    result = load.wait_event("result", cfg.fanout_seconds + 60)
    finally:
        signal.close()
    expected = published["sent"] * sessions
    delivered = sum(result["frames_per_session"])
    # What the relays spend per delivered Gbit/s (CPU seconds per second, i.e. cores): the cost of
    # a viewer, comparable between bitrates and counts.
    delivered_gbps = delivered * cfg.fanout_frame_size * 8 / cfg.fanout_seconds / 1e9
    relay_cpu = cpu_percent["relay"] + cpu_percent.get("edge", 0.0)
    return {
        "relay": relay_stack, "loops": loops if relay_stack == "swift" else None,
        "topology": "cluster" if cluster else "single", "subscribers": sessions, "subscribed": ready["subscribed"],
        "delivered_gbps": round(delivered_gbps, 3),
        "relay_cores_per_gbps": round(relay_cpu / 100 / delivered_gbps, 3) if delivered_gbps > 0 else float("nan"),
        "edge_cpu_percent": cpu_percent.get("edge", float("nan")),
        "bitrate_bps": cfg.fanout_bitrate_bps,
        "sent": published["sent"], "delivered": delivered, "expected": expected,
        "delivery_percent": round(100 * delivered / expected, 3) if expected else float("nan"),
        "sessions_complete": sum(1 for n in result["frames_per_session"] if n >= published["sent"]),
        "relay_cpu_percent": cpu_percent["relay"], "cpu_percent": cpu_percent, "busy_before_percent": idle,
        "errors": result.get("errors", ""),
        # What each connection costs the relay: its RSS growth from before the first subscriber to
        # the end of the broadcast, per subscriber (the cached groups are shared and counted once).
        "relay_rss_mb": round(relay_loaded_kib / 1024, 1),
        "relay_kib_per_subscriber": round((relay_loaded_kib - relay_base_kib) / sessions, 1)
        if relay_loaded_kib > 0 and relay_base_kib > 0 else float("nan"),
        # Delivered, but more than a group (1 s) behind the publisher: too late for a live viewer.
        "late_percent": _share_above(result["latencies_us"], 1_000_000),
        **latency_summary(result["latencies_us"]),
    }


def _share_above(latencies_us: list[int], limit_us: int) -> float:
    """% of the measured frames whose latency exceeds ``limit_us``."""
    if not latencies_us:
        return float("nan")
    return round(100 * sum(1 for v in latencies_us if v > limit_us) / len(latencies_us), 2)


def run_gst(tools: Tools, cfg: Config, log) -> dict:
    """Case 4: appsrc ! moqsink → Swift relay → moqsrc latency=0 ! appsink, 1080p30 H.264."""
    log(f"gstreamer: appsrc ! moqsink → swift relay → moqsrc ! appsink, 1080p30 H.264 ({cfg.gst_seconds:g} s)")
    path = broadcast_name("gst")
    idle = wait_until_idle(log, timeout=cfg.idle_timeout_s)
    relay = start_relay(tools, "swift", "gst-swiftrelay-relay")
    with stopping(relay.child):
        publisher = start_client(tools, "swift", "gst-publish", "gst-publisher", relay, {
            "broadcast": path, "seconds": cfg.gst_seconds + 15, "bitrate-kbps": cfg.gst_bitrate_kbps,
        })
        with stopping(publisher):
            encoded = publisher.wait_event("encoded", 120)
            ready = publisher.wait_event("ready", 30)
            subscriber = start_client(tools, "swift", "gst-subscribe", "gst-subscriber", relay, {
                "broadcast": path, "publisher-base-ns": ready["base_ns"], "seconds": cfg.gst_seconds,
            })
            with stopping(subscriber):
                subscriber.wait_event("measuring", 60)
                cpu = CPUWindow({"relay": relay.child, "publisher": publisher, "subscriber": subscriber})
                cpu.start()
                result = subscriber.wait_event("result", cfg.gst_seconds + 30)
                cpu_percent = cpu.stop()
    return {
        "frames": result["frames"], **latency_summary(result["latencies_us"]),
        "cpu_percent": cpu_percent, "latencies_us": result["latencies_us"], "busy_before_percent": idle,
        "encoder_cpu_percent": round(100 * encoded["encode_cpu_s"] / encoded["media_s"], 1),
        "stream_kbps": round(encoded["kbps"]), "clip_frames": encoded["frames"],
        "rust_plugin": "none installable here (moq-dev's moq-gst is not on PyPI or in Debian)",
    }


def run_ttff(tools: Tools, cfg: Config, log) -> dict:
    """Case 4c: time to first frame. A 1080p30 H.264 broadcast (appsrc ! moqsink, a GOP per second)
    runs through the Swift relay; players are started one after another, each with a new connection:
    `moqbench ttff` (moqsrc ! decodebin ! appsink sync=true at default settings: start → first
    decoded frame rendered) and moq-dev's `watch` (connect → first decoded frame)."""
    log(f"time to first frame: {cfg.ttff_runs} players of each stack on a running 1080p30 broadcast")
    path = broadcast_name("ttff")
    idle = wait_until_idle(log, timeout=cfg.idle_timeout_s)
    relay = start_relay(tools, "swift", "ttff-relay")
    with stopping(relay.child):
        publisher = start_client(tools, "swift", "gst-publish", "ttff-publisher", relay, {
            "broadcast": path, "seconds": 300, "bitrate-kbps": cfg.gst_bitrate_kbps,
        })
        with stopping(publisher):
            publisher.wait_event("encoded", 120)
            publisher.wait_event("ready", 30)
            time.sleep(1.5)  # a first complete group at the relay
            swift = start_client(tools, "swift", "ttff", "ttff-swift", relay, {
                "broadcast": path, "runs": cfg.ttff_runs,
            })
            with stopping(swift):
                result = swift.wait_event("result", 60 + 25 * cfg.ttff_runs)
            rust_ms = []
            for i in range(cfg.ttff_runs):
                argv = [tools.python, str(tools.moqpeer), "watch", "--url", relay.url, "--fingerprint",
                        relay.fingerprint, "--broadcast", path, "--frames", "1", "--seconds", "20",
                        "--catalog-wait-ms", "0"]
                watcher = Child(f"ttff-rust-{i}", tools.wrap("rust", f"ttff-rust-{i}", argv), tools.log_dir)
                with stopping(watcher):
                    rust_ms.append(watcher.wait_event("first_frame", 40)["ms"])
                time.sleep(0.3)
    swift_ms = [v for v in result["ms"] if v is not None]
    element_ms = [v for v in result["element_ms"] if v is not None]
    return {
        "runs": cfg.ttff_runs, "busy_before_percent": idle,
        "swift": _ms_summary(swift_ms), "swift_element": _ms_summary(element_ms), "rust": _ms_summary(rust_ms),
        "swift_ms": swift_ms, "swift_element_ms": element_ms, "rust_ms": rust_ms,
    }


def run_glass(tools: Tools, cfg: Config, log) -> list[dict]:
    """Case 4d: glass-to-glass, per stage, at moqsrc's default latency and the other values asked for.
    No Rust row: moq-dev's GStreamer plugin is not installable here."""
    rows = []
    for latency in cfg.glass_latencies:
        log(f"glass-to-glass: 1080p30, moqsrc latency {latency} ({cfg.glass_seconds:g} s)")
        idle = wait_until_idle(log, timeout=cfg.idle_timeout_s)
        relay = start_relay(tools, "swift", f"glass-{latency}-relay")
        with stopping(relay.child):
            options = {"broadcast": broadcast_name("glass"), "seconds": cfg.glass_seconds}
            if latency.startswith("fixed-"):
                options["latency-mode"] = "fixed"
                options["latency"] = latency[len("fixed-"):]
            elif latency != "default":
                options["latency"] = latency
            child = start_client(tools, "swift", "glass", f"glass-{latency}", relay, options)
            with stopping(child):
                result = child.wait_event("result", cfg.glass_seconds + 90)
        stages = {k[len("stage_"):]: _ms_summary(v) for k, v in result.items() if k.startswith("stage_")}
        rows.append({"latency": latency, "frames": result["frames"], "player_latency_ms": result["player_latency_ms"],
                     "margin_ms": result.get("margin_ms"), "retargets": result.get("retargets"),
                     "total": _ms_summary(result["latency_ms"]), "stages": stages, "busy_before_percent": idle,
                     "latency_ms": result["latency_ms"]})
    return rows


def _ms_summary(values: list[float]) -> dict:
    """p50 / p90 / max of a few timings (ms)."""
    if not values:
        return {"p50_ms": float("nan"), "p90_ms": float("nan"), "max_ms": float("nan")}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50_ms": round(pick(0.5), 1), "p90_ms": round(pick(0.9), 1), "max_ms": round(ordered[-1], 1)}


def run_join(tools: Tools, cfg: Config, log) -> dict:
    """Case 4e: viewers who join a running broadcast at random points of its GOP, at moqsrc's defaults
    (`moqbench join`, one process: publisher, relay, a UDP proxy on the player's path, the viewers):
    video-only viewers (glass to glass as in 4d), then audio-and-video viewers whose sound is rendered
    by moqtestaudiosink (a GstAudioBaseSink measuring the sine), and one viewer through a blackhole and
    one through a delay spike (everything late and in order: the live edge itself is late).
    No Rust row: moq-dev's GStreamer player is not installable here, and its `watch` renders nothing."""
    modes = {
        "video": ["--no-audio", "--stall-s", "0", "--spike-s", "0"],
        "av": ["--audio-buffer-ms", str(cfg.join_audio_buffer_ms), "--stall-s", f"{cfg.join_stall_s:g}",
               "--spike-s", f"{cfg.join_stall_s:g}"],
    }
    out = {"gops": cfg.join_gops, "joins": cfg.join_count, "audio_buffer_ms": cfg.join_audio_buffer_ms, "modes": {}}
    gops = [float(g) for g in cfg.join_gops.split(",") if g.strip()]
    for mode, extra in modes.items():
        log(f"joins ({mode}): GOP {cfg.join_gops} s, {cfg.join_count} viewers each, {cfg.join_watch_s:g} s each")
        idle = wait_until_idle(log, timeout=cfg.idle_timeout_s)
        argv = [str(tools.moqbench), "join", "--gops", cfg.join_gops, "--joins", str(cfg.join_count),
                "--watch-s", f"{cfg.join_watch_s:g}"] + extra
        child = Child(f"join-{mode}", tools.wrap("swift", f"join-{mode}", argv), tools.log_dir)
        budget = len(gops) * (cfg.join_count * (cfg.join_watch_s + max(gops) + 8) + 60
                              + 2 * (25 + max(gops) + cfg.join_stall_s))
        with stopping(child):
            child.wait_event("result", budget)
        joins = [e for e in child.events if e["event"] == "join"]
        stalls = [e for e in child.events if e["event"] == "stall"]
        rows = {}
        for gop in gops:
            mine = [j for j in joins if j["gop_s"] == gop]
            video = [v for j in mine for v in j["video_ms"]]
            audio = [a for j in mine for a in j["audio_ms"]]
            per_join = [_percentile(j["video_ms"], 0.5) for j in mine if j["video_ms"]]
            rows[f"{gop:g}"] = {
                "joins": len(mine), "phases_ms": [round(j["phase_ms"]) for j in mine],
                "video": _ms_summary99(video), "audio": _ms_summary99(audio), "per_join_p50": _ms_summary99(per_join),
                "first_frame_glass": _ms_summary99([j["first_ms"] for j in mine]),
                "time_to_first_frame": _ms_summary99([j["ttff_ms"] for j in mine]),
                "audio_rendered_ms": round(sum(j["audio_rendered_ms"] for j in mine)),
                "audio_pushed_ms": round(sum(j["audio_pushed_ms"] for j in mine)),
                "audio_published_ms": round(sum(j["audio_published_ms"] for j in mine)),
                "discontinuities": sum(max(0, j["discontinuities"]) for j in mine),
                "resyncs": sum(max(0, j["resyncs"]) for j in mine),
                "silence_gaps": sum(max(0, j["silence_gaps"]) for j in mine),
                "retargets": sum(j["retargets"] for j in mine),
                # Each join's audio (ms) where it missed any: which join, and whether pushed or rendered.
                "audio_short_joins": [
                    {"join": n, "phase_ms": round(j["phase_ms"]), "ttff_ms": round(j["ttff_ms"]),
                     "rendered_ms": round(j["audio_rendered_ms"], 1), "pushed_ms": j["audio_pushed_ms"],
                     "published_ms": j["audio_published_ms"]}
                    for n, j in enumerate(mine)
                    if j["audio_published_ms"] - j["audio_rendered_ms"] >= 0.5
                ],
            }
            rows[f"{gop:g}"]["stalls"] = {
                stall.get("kind", "blackhole"): {
                    "stall_s": stall["stall_s"], "before_ms": round(stall["before_ms"], 1), "back_s": stall["back_s"],
                    "catch_up_drops": stall.get("catch_up_drops"), "discontinuities": stall.get("discontinuities"),
                    "series": [[round(t, 2), round(g, 1)] for t, g in zip(stall["after_s"], stall["glass_ms"])],
                }
                for stall in stalls if stall["gop_s"] == gop
            }
        out["modes"][mode] = {"gops": rows, "busy_before_percent": idle}
    return out


def run_ladder(tools: Tools, cfg: Config, log) -> dict:
    """Case 4f: adaptive bitrate. `moqbench ladder` publishes a ladder (moqsink, one x264 encoder per rung,
    keyframes aligned, snow so every encoder spends its bitrate) through the Swift relay, and plays it with
    moqsrc at its defaults (adaptive bitrate on) through a UDP proxy whose rate cap follows the phases; beside
    it, moq-dev's subscriber (`moqpeer.py watch --video-track`, decoding video and audio) reads one fixed
    rendition each, through a proxy capped alike. Frames are counted where each player has them: moqsrc's
    after the decoder, rendered on the clock (appsink sync=true); moq-dev's as decoded."""
    fixed = [f"v{k}" for k in cfg.ladder_fixed.split(",") if k.strip()]
    log(f"adaptive bitrate: ladder {cfg.ladder_kbps} kbit/s, cap {cfg.ladder_caps} kbit/s for {cfg.ladder_phase_s} s; "
        f"moq-dev's subscriber at {', '.join(fixed) or 'no rendition'}")
    idle = wait_until_idle(log, timeout=cfg.idle_timeout_s)
    phases = [float(x) for x in cfg.ladder_phase_s.split(",")]
    lead_s = 6.0
    argv = [str(tools.moqbench), "ladder", "--kbps", cfg.ladder_kbps, "--caps", cfg.ladder_caps,
            "--phase-s", cfg.ladder_phase_s, "--legs", str(len(fixed)), "--lead-s", f"{lead_s:g}"]
    swift = Child("ladder-swift", tools.wrap("swift", "ladder-swift", argv), tools.log_dir)
    watchers = []
    with stopping(swift):
        ready = swift.wait_event("ready", 120)
        for i, track in enumerate(fixed):
            if track not in ready["tracks"]:
                raise BenchFailure(f"BENCH_LADDER_FIXED: {track} is not in the ladder {ready['tracks']}")
            watch_argv = [tools.python, str(tools.moqpeer), "watch", "--url", ready["urls"][i], "--fingerprint",
                          ready["fingerprint"], "--broadcast", ready["broadcast"], "--video-track", track,
                          "--seconds", f"{lead_s + 4 + sum(phases) + 5:g}", "--timeout-s", "0"]
            watchers.append((track, Child(f"ladder-rust-{track}", watch_argv, tools.log_dir)))
        with stopping(*[w for _, w in watchers]):
            result = swift.wait_event("result", lead_s + sum(phases) + 120)
            for _, watcher in watchers:
                watcher.wait_event("summary", 30)
    base = ready["publisher_base_ns"]
    start, end = result["start_ns"], result["end_ns"]
    rows = [{
        "player": "swift moqsrc (adaptive)", "rendition": "adaptive",
        **_ladder_metrics(list(zip(result["video_ns"], result["video_pts_us"])), result["audio_pts_us"], None,
                          base, start, end),
        "switches_up": result["switches_up"], "switches_down": result["switches_down"],
        "renditions": _time_per_rendition(result["rung_ns"], result["rung_names"], start, end),
        "errors": result["errors"],
    }]
    for track, watcher in watchers:
        video = [(e["at_ns"], e["pts_us"]) for e in watcher.events if e["event"] == "video"]
        audio = [(e["at_ns"], e["pts_us"]) for e in watcher.events if e["event"] == "audio"]
        rows.append({"player": "moq-dev subscriber (watch)", "rendition": track,
                     **_ladder_metrics(video, None, audio, base, start, end),
                     "switches_up": 0, "switches_down": 0, "renditions": {track: 100.0},
                     "errors": sum(1 for e in watcher.events if e["event"] == "decode_error")})
    return {"kbps": cfg.ladder_kbps, "caps": cfg.ladder_caps, "phase_s": cfg.ladder_phase_s,
            "busy_before_percent": idle, "rows": rows}


def _ladder_metrics(video: list[tuple[int, int]], audio_pts: list[int] | None, audio_timed: list[tuple[int, int]] | None,
                    base_ns: int, start_ns: int, end_ns: int) -> dict:
    """What one player had in [start, end): video frames against the 30 fps published, pauses longer than 100 ms
    between them, capture-to-player latency, and audio (20 ms frames) missing among what it had: lost (two
    frames or more together) and single frames (catch-up's drops)."""
    window_s = (end_ns - start_ns) / 1e9
    shown = [(at, pts) for at, pts in video if start_ns <= at < end_ns]
    times = [at for at, _ in shown]
    gaps = [(b - a) / 1e6 for a, b in zip([start_ns] + times, times + [end_ns])]
    stalls = [g for g in gaps if g > 100]
    latency = [(at - (base_ns + pts * 1000)) / 1e6 for at, pts in shown]
    if audio_timed is not None:
        audio_pts = [pts for at, pts in audio_timed if start_ns <= at < end_ns]
    else:
        # moqsrc's audio: the frames whose capture falls in the window (rendered on the clock, ~latency later).
        audio_pts = [pts for pts in (audio_pts or []) if start_ns <= base_ns + pts * 1000 < end_ns]
    audio_pts = sorted(set(audio_pts))
    gaps_us = [b - a for a, b in zip(audio_pts, audio_pts[1:])]
    # moqsrc's catch-up takes added delay back by dropping single 20 ms frames at quiet moments, on
    # purpose: those are counted apart from audio lost (two frames or more missing together).
    missing_ms = sum(g / 1000 - 20 for g in gaps_us if g > 50_000)
    single_drops = sum(1 for g in gaps_us if 30_000 < g <= 50_000)
    return {
        "frames": len(shown), "published": round(window_s * 30),
        "played_percent": round(min(100.0, 100 * len(shown) / max(1, window_s * 30)), 1),
        "stalls": len(stalls), "stall_ratio_percent": round(100 * sum(stalls) / 1000 / window_s, 1),
        "longest_stall_ms": round(max(stalls, default=0)),
        "latency": _ms_summary99(latency), "audio_missing_ms": round(missing_ms),
        "audio_single_drops": single_drops, "audio_frames": len(audio_pts),
    }


def _time_per_rendition(at_ns: list[int], names: list[str], start_ns: int, end_ns: int) -> dict:
    """The share of [start, end) each rendition played (%), from the player's samples of its video track."""
    shares: dict[str, float] = {}
    for i, (at, name) in enumerate(zip(at_ns, names)):
        until = at_ns[i + 1] if i + 1 < len(at_ns) else end_ns
        span = max(0, min(until, end_ns) - max(at, start_ns))
        shares[name] = shares.get(name, 0) + span
    total = max(1, end_ns - start_ns)
    return {name: round(100 * span / total, 1) for name, span in shares.items() if span > 0}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _ms_summary99(values: list[float]) -> dict:
    """p50 / p99 / max of many timings (ms)."""
    values = [v for v in values if v == v]
    if not values:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"), "n": 0}
    return {"p50_ms": round(_percentile(values, 0.5), 1), "p99_ms": round(_percentile(values, 0.99), 1),
            "max_ms": round(max(values), 1), "n": len(values)}


def run_longform(tools: Tools, cfg: Config, log) -> dict:
    """Case 4b: long-form listening (moqsrc buffering=long-form) beside live playback of the same Opus
    broadcast, in one process (`moqbench long-form`: relay, UDP proxy, moqsink, moqsrc): time to the
    first sample, fill rate, and the longest blackhole on the player's path that leaves no gap in the
    sample counter. moq-dev's moqsrc has no long-form mode: its row would be the live one."""
    log(f"long-form: {cfg.longform_buffer_s:g} s buffer, outages {cfg.longform_outages} s; "
        f"live outages {cfg.longform_live_outages} s")
    wait_until_idle(log, timeout=cfg.idle_timeout_s)
    argv = [str(tools.moqbench), "long-form", "--buffer-s", f"{cfg.longform_buffer_s:g}",
            "--outages", cfg.longform_outages, "--live-outages", cfg.longform_live_outages]
    child = Child("longform", tools.wrap("swift", "longform", argv), tools.log_dir)
    budget = cfg.longform_buffer_s * 4 + sum(float(x) for x in cfg.longform_outages.split(",")) * 3 + 120
    with stopping(child):
        child.wait_event("result", budget, predicate=lambda e: e.get("mode") == "live-fixed-100")
    rows = {}
    for mode in ("long-form", "live", "live-fixed-100"):
        mine = [e for e in child.events if e.get("mode") == mode]
        startup = next(e for e in mine if e["event"] == "startup")
        result = next(e for e in mine if e["event"] == "result")
        rows[mode] = {
            "startup_ms": round(startup["startup_ms"]), "fill_rate": round(startup["fill_rate"], 1),
            "filled_ms": round(startup["filled_ms"]), "buffered_ms": round(startup["buffered_ms"]),
            "outages": [{k: e[k] for k in ("seconds", "gap_free", "gaps", "underruns")}
                        for e in mine if e["event"] == "outage"],
            "longest_gap_free_s": result["longest_gap_free_s"],
        }
    return {"buffer_s": cfg.longform_buffer_s, "modes": rows}


def run_memory(tools: Tools, cfg: Config, log) -> list[dict]:
    """Case 5: RSS of the subscriber and the relay over many one-frame groups, per stack."""
    rows = []
    total = cfg.memory_warmup_groups + cfg.memory_groups
    for stack in STACKS:
        log(f"memory: {stack} stack, {total} groups at {cfg.memory_rate:g}/s")
        rows.append(_memory_run(tools, cfg, log, stack, total))
    return rows


def _memory_run(tools: Tools, cfg: Config, log, stack: str, total: int) -> dict:
    tag = f"memory-{stack}"
    path = broadcast_name("memory")
    idle = wait_until_idle(log, timeout=cfg.idle_timeout_s)
    signal = GoSignal(False)
    seconds = total / cfg.memory_rate
    relay = start_relay(tools, stack, f"{tag}-relay")
    samples: list[dict] = []
    try:
        with stopping(relay.child):
            publisher = start_client(tools, stack, "publish", f"{tag}-publisher", relay, {
                "broadcast": path, "go-file": str(signal.go_file), "frame-size": 1000, "fps": cfg.memory_rate,
                "frames-per-group": 1, "frames": total, "max-age-ms": cfg.memory_max_age_ms,
            })
            with stopping(publisher):
                publisher.wait_event("announced", 30)
                subscriber = start_client(tools, stack, "subscribe", f"{tag}-subscriber", relay, {
                    "broadcast": path, "frames": total, "warmup-frames": 1 << 62,
                    "progress-every": cfg.memory_sample_every, "deadline-s": seconds + 60,
                })
                with stopping(subscriber):
                    subscriber.wait_event("subscribed", 30)
                    time.sleep(0.5)
                    signal.go()
                    subscriber.wait_event("first_frame", 30)
                    first = {"groups": 0, "subscriber_kib": subscriber.rss_kib(), "relay_kib": relay.child.rss_kib()}
                    result = _follow_memory(subscriber, relay.child, samples, tag, seconds + 90)
                    published = publisher.wait_event("result", 60)
    finally:
        signal.close()
    return {"stack": stack, "sent": published["sent"], "received": result["frames"],
            "first_frame": first, "samples": samples, "busy_before_percent": idle,
            **_growth(samples, cfg.memory_warmup_groups)}


def _follow_memory(subscriber: Child, relay: Child, samples: list[dict], tag: str, timeout: float) -> dict:
    """Samples both RSS at each progress event until the subscriber's result; returns the result."""
    deadline = time.monotonic() + timeout
    quiet_after_exit = 0
    while time.monotonic() < deadline:
        events = subscriber.poll_events()
        for event in events:
            if event["event"] == "progress":
                # The subscriber reports its own RSS (it may exit right after its last progress event).
                samples.append({"groups": event["groups"], "subscriber_kib": event["rss_kib"],
                                "relay_kib": relay.rss_kib()})
            elif event["event"] == "result":
                return event
            elif event["event"] == "error":
                raise BenchFailure(f"{tag}: {event.get('message')}")
        if not events and subscriber.proc.poll() is not None:
            quiet_after_exit += 1
            if quiet_after_exit > 10:
                raise BenchFailure(f"{tag}: the subscriber exited without a result (log: {subscriber.log_path})")
        time.sleep(0.02)
    raise BenchFailure(f"{tag}: the subscriber did not finish within {timeout:g} s")


def _growth(samples: list[dict], warmup: int) -> dict:
    """Start (first sample at or after the warm-up), end, end − start and max − start, per process, in MB."""
    measured = [s for s in samples if s["groups"] >= warmup]
    out: dict = {}
    for key in ("subscriber", "relay"):
        values = [s[f"{key}_kib"] for s in measured if s[f"{key}_kib"] > 0]
        if not values:
            continue
        start = values[0]
        out[key] = {
            "start_mb": round(start / 1024, 2), "end_mb": round(values[-1] / 1024, 2),
            "growth_mb": round((values[-1] - start) / 1024, 2), "max_growth_mb": round((max(values) - start) / 1024, 2),
            "groups_measured": measured[-1]["groups"] - measured[0]["groups"],
        }
    return out
