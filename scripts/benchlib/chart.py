# SPDX-License-Identifier: MIT
"""results.png: one panel per measured case, Swift and Rust side by side."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the headless backend)

COLORS = {"swift": "#f05138", "rust": "#3b6ea5"}


def _label(row: dict) -> str:
    return f"{row['relay']} relay\n{row['clients']} clients"


def _bars(ax, labels: list[str], series: dict[str, list[float]], ylabel: str, title: str) -> None:
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(labels))]
        bars = ax.bar(xs, values, width, label=name)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)


def _latency(ax, rows: list[dict]) -> None:
    _bars(ax, [_label(r) for r in rows], {"p50": [r["p50_ms"] for r in rows], "p99": [r["p99_ms"] for r in rows]},
          "ms", "1. latency, 1 KB @ 100 fps")


def _throughput(ax, rows: list[dict]) -> None:
    _bars(ax, [_label(r) for r in rows], {"MB/s": [r["mb_per_s"] for r in rows]}, "MB/s",
          "2. throughput, 100 KB frames")


def _openloop(ax, rows: list[dict]) -> None:
    _bars(ax, [_label(r) for r in rows], {"delivered %": [r["delivered_percent"] for r in rows],
                                          "delivered MB/s": [r["mb_per_s"] for r in rows]}, "% / MB/s",
          "2b. open loop, 1,500 × 100 KB groups")


def _fanout(ax, rows: list[dict], key: str, ylabel: str, title: str, log: bool = False) -> None:
    series = [("rust", None)] + [("swift", n) for n in sorted({r.get("loops") or 1 for r in rows if r["relay"] == "swift"})]
    for stack, loops in series:
        mine = sorted((r for r in rows if r["relay"] == stack and (loops is None or (r.get("loops") or 1) == loops)),
                      key=lambda r: r["subscribers"])
        label = f"{stack} relay" + (f", {loops} loop{'s' if loops != 1 else ''}" if loops else "")
        ax.plot([r["subscribers"] for r in mine], [r[key] for r in mine], "o-" if loops in (None, 1) else "s--",
                color=COLORS[stack], label=label)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("subscribers")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)


def _gst(ax, gst: dict, latency: list[dict]) -> None:
    raw = next((r for r in latency if r["relay"] == "swift" and r["clients"] == "swift"), None)
    labels = ["GStreamer\n1080p30 H.264"] + (["raw track\n(case 1)"] if raw else [])
    series = {"p50": [gst["p50_ms"]] + ([raw["p50_ms"]] if raw else []),
              "p99": [gst["p99_ms"]] + ([raw["p99_ms"]] if raw else [])}
    _bars(ax, labels, series, "ms", "4. GStreamer path vs raw track (Swift)")


def _memory(ax, rows: list[dict]) -> None:
    for row in rows:
        for proc, style in (("subscriber", "-"), ("relay", "--")):
            points = [(s["groups"], s[f"{proc}_kib"] / 1024) for s in row["samples"] if s[f"{proc}_kib"] > 0]
            ax.plot([g for g, _ in points], [mb for _, mb in points], style, color=COLORS[row["stack"]],
                    label=f"{row['stack']} {proc}")
    ax.set_xlabel("groups received")
    ax.set_ylabel("RSS MB")
    ax.set_title("5. memory", fontsize=10)
    ax.legend(fontsize=7)


def draw(results: dict, path: Path) -> None:
    """Writes the chart of every case present in ``results``."""
    cases = results.get("cases", {})
    fig, axes = plt.subplots(2, 4, figsize=(20, 9))
    panels = axes.flatten()
    if "latency" in cases:
        _latency(panels[0], cases["latency"])
    if "throughput" in cases:
        _throughput(panels[1], cases["throughput"])
    if "fanout" in cases:
        mbit = cases["fanout"][0].get("bitrate_bps", 4_000_000) / 1e6
        _fanout(panels[2], cases["fanout"], "p99_ms", "p99 latency ms (log)", f"3. fan-out p99, {mbit:g} Mbit/s each",
                log=True)
        _fanout(panels[3], cases["fanout"], "relay_cpu_percent", "relay CPU % of one core", "3. fan-out relay CPU")
    if "gst" in cases:
        _gst(panels[4], cases["gst"], cases.get("latency", []))
    if "memory" in cases:
        _memory(panels[5], cases["memory"])
    if "openloop" in cases:
        _openloop(panels[6], cases["openloop"])
    for ax in panels:
        if not ax.has_data():
            ax.set_axis_off()
    fig.suptitle(f"SwiftMoQ vs moq-dev (Rust): {results['machine']['summary']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
