#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`make faults` report: build/faults/results.json -> the table between the markers of
docs/reliability.md, and docs/reliability.png (rendered share and stall ratio per row, and
latency). Rows and figures come only from the JSON the fault matrix wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BEGIN = "<!-- faults:begin -->"
END = "<!-- faults:end -->"


def fmt(value, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}"


def data(r: dict) -> str:
    """The data track's column: delivered share of the window, repeats, and who read it."""
    sent = r.get("dataSent", 0)
    if not sent:
        return "–"
    share = 100 * r["dataDelivered"] / sent
    return f"{share:.1f} % ({r['dataRepeated']}) {r['dataReader']}"


def table(rows: list[dict]) -> str:
    lines = [
        "| case | relay | played | stalls (ratio) | latency p50 / p99 | recovery | first frame | reconnects pub/play | errors | data delivered (repeated) | RSS | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['relay']} | {fmt(r['renderedPercent'], 1)} % ({r['framesPlayed']}/{r['framesPublished']}) "
            f"| {r['stalls']} ({fmt(r['stallRatioPercent'], 1)} %) | {fmt(r.get('latencyP50Ms'))} / {fmt(r.get('latencyP99Ms'))} ms "
            f"| {fmt(r.get('recoveryMs'))} ms | {fmt(r.get('timeToFirstFrameMs'))} ms "
            f"| {r['publisherReconnects']} / {r['playerReconnects']} | {r['errors']} "
            f"| {data(r)} | {fmt(r['rssMB'])} MB | {r['target']} |"
        )
    return "\n".join(lines)


def chart(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['name']}{' (Rust)' if r['relay'] == 'rust' else ''}" for r in rows]
    ys = range(len(rows))
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 0.45 * len(rows) + 1.5), sharey=True)
    left.barh(ys, [r["renderedPercent"] for r in rows], color="#f05138", label="frames played %")
    left.barh(ys, [r["stallRatioPercent"] for r in rows], color="#3b6ea5", height=0.4, label="stall ratio %")
    left.set_yticks(list(ys), labels, fontsize=8)
    left.invert_yaxis()
    left.set_xlim(0, 100)
    left.set_xlabel("%")
    left.legend(fontsize=7, loc="lower right")
    left.set_title("played and stalled (measured window)", fontsize=10)
    right.barh([y - 0.2 for y in ys], [r.get("latencyP50Ms") or 0 for r in rows], height=0.4, label="p50", color="#888")
    right.barh([y + 0.2 for y in ys], [r.get("latencyP99Ms") or 0 for r in rows], height=0.4, label="p99", color="#333")
    right.set_xscale("log")  # a blackhole's p99 is tens of seconds, the rest hundreds of ms
    right.set_xlabel("publish-to-render ms (log)")
    right.legend(fontsize=7, loc="lower right")
    right.set_title("latency", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    results = root / "build/faults/results.json"
    doc = root / "docs/reliability.md"
    rows = json.loads(results.read_text())
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        print(f"{doc}: markers {BEGIN} / {END} missing", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{BEGIN}\n{table(rows)}\n{END}{tail}")
    chart(rows, root / "docs/reliability.png")
    print(f"wrote the table into {doc} and docs/reliability.png ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
