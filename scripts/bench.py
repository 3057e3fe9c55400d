#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`make bench`: SwiftMoQ and moq-dev's Rust implementation doing the same work, side by side.

Cases (each configurable through the environment, see benchlib/config.py):
  1. latency     1 KB frames at 100 fps through each relay with each client pair: p50/p99
  2. throughput  100 KB frames as fast as the subscriber acknowledges: MB/s with no loss
  1d. ietf       cases 1 and 2 over IETF MoQ Transport (drafts 16, 14) beside moq-lite, through moq-dev's
                 relay, with both bridging directions (Swift IETF ↔ Rust moq-lite)
  2b. openloop   100 KB single-frame groups as fast as the publisher writes (1,500 of them), one
                 subscriber with a 10 s budget: delivered %, order, session kept, relay cost
  3. fanout      one 2 Mbit/s broadcast to 50/100/200/400 subscribers: delivery %, p99 and relay CPU (the
                 Swift relay at 1 and 2 event loops), relay cores per delivered Gbit/s
  3b. cluster    the same broadcast published on one Swift relay and watched on another linked to it
  4. gst         appsrc ! moqsink → Swift relay → moqsrc latency=0 ! appsink, 1080p30 H.264
  4c. ttff       time to first frame: a new moqsrc ! decodebin ! appsink player (default settings),
                 and moq-dev's watch, started N times on a running 1080p30 broadcast
  4d. glass      glass-to-glass: a live 1080p30 source with a clock overlay, x264 zerolatency → moqsink →
                 Swift relay → moqsrc → decodebin → a synchronised sink, in one process; per stage
  4e. join       viewers joining a running broadcast at random GOP phases (GOP 1 s and 2 s), video only
                 and with audio into a real audio sink: glass to glass, audio rendered, a 1 s blackhole
                 and a 1 s delay spike
  4b. longform   moqsrc buffering=long-form vs live: startup, fill rate, longest gap-free outage
  5. memory      RSS of the subscriber and the relay over 50,000 groups

Prints Markdown tables with Swift/Rust ratios and the issue's targets, and writes
build/bench/results.json and build/bench/results.png. Each role's stderr is kept in
build/bench/logs/. `--profile DIR` runs the Swift processes under `perf record -g` instead
(their CPU figures then include perf) and summarises each profile in DIR/<process>.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from benchlib import cases, profile, report
from benchlib.config import Config
from benchlib.processes import BenchFailure, install_cleanup
from benchlib.roles import Tools

ROOT = Path(__file__).resolve().parent.parent
RUNNERS = {
    "latency": cases.run_latency,
    "throughput": cases.run_throughput,
    "webtransport": cases.run_webtransport,
    "websocket": cases.run_websocket,
    "ietf": cases.run_ietf,
    "openloop": cases.run_openloop,
    "fanout": cases.run_fanout,
    "cluster": cases.run_cluster,
    "gst": cases.run_gst,
    "ttff": cases.run_ttff,
    "glass": cases.run_glass,
    "join": cases.run_join,
    "ladder": cases.run_ladder,
    "longform": cases.run_longform,
    "memory": cases.run_memory,
}


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine() -> dict:
    """What ran the benchmark."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    cores = os.cpu_count() or 0
    try:
        import importlib.metadata as metadata
        rust = f"moq-rs {metadata.version('moq-rs')} / moq-ffi {metadata.version('moq-ffi')}"
    except Exception:  # pragma: no cover - depends on the virtualenv
        rust = "moq-rs (version unknown)"
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {
        "cpu": model, "cores": cores, "kernel": platform.release(), "rust": rust,
        "swift": swift[0] if swift else "unknown", "load_at_start": os.getloadavg(),
        "summary": f"{cores} cores ({model}), loopback, {rust}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench", help="results directory")
    parser.add_argument("--profile", type=Path, help="run the Swift processes under perf record, into DIR")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for an idle machine before each run")
    args = parser.parse_args()

    cfg = Config()
    if args.no_wait:
        cfg.idle_timeout_s = 0
    unknown = [c for c in cfg.cases if c not in RUNNERS]
    if unknown:
        parser.error(f"unknown case(s) in BENCH_CASES: {', '.join(unknown)} (known: {', '.join(RUNNERS)})")
    tools = Tools(
        swiftmoq=ROOT / "build" / "bin" / "swiftmoq", moqbench=ROOT / "build" / "bin" / "moqbench",
        python=sys.executable, moqpeer=ROOT / "Tests" / "Interop" / "moqpeer.py", log_dir=args.out / "logs",
        profile_dir=args.profile,
        relay_threads=int(os.environ["BENCH_RELAY_THREADS"]) if os.environ.get("BENCH_RELAY_THREADS") else None,
    )
    for tool in (tools.swiftmoq, tools.moqbench):
        if not tool.exists():
            parser.error(f"{tool} is missing: run `make bench` (it builds it)")
    install_cleanup()
    args.out.mkdir(parents=True, exist_ok=True)

    results: dict = {"machine": machine(), "config": cfg.as_dict(), "cases": {}, "failures": {}, "load_after": {}}
    results["config"]["relay_threads"] = tools.relay_threads
    started = time.monotonic()
    for case in cfg.cases:
        try:
            results["cases"][case] = RUNNERS[case](tools, cfg, log)
        except BenchFailure as exc:
            log(f"case {case} failed: {exc}")
            results["failures"][case] = str(exc)
        results["load_after"][case] = os.getloadavg()  # a busy neighbour shows here
    results["seconds"] = round(time.monotonic() - started, 1)
    results["targets"] = report.targets(results)

    json_path = args.out / "results.json"
    json_path.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(report.render(results))
    try:
        from benchlib import chart
        chart.draw(results, args.out / "results.png")
        log(f"wrote {json_path} and {args.out / 'results.png'} ({results['seconds']} s)")
    except ImportError as exc:
        log(f"no chart ({exc}): `make bench` installs matplotlib into .venv")
    if args.profile:
        for path in profile.summarize(args.profile):
            log(f"profile summary: {path}")
    return 1 if results["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
