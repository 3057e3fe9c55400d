# SPDX-License-Identifier: MIT
"""The printed tables (Markdown, with Swift/Rust ratios) and the issue's targets, from results.json's dict."""

from __future__ import annotations

import math

from .stats import fmt, ratio


def table(header: list[str], rows: list[list]) -> str:
    """A Markdown table with aligned columns."""
    cells = [header] + [[fmt(c) if not isinstance(c, str) else c for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _find(rows: list[dict], **keys) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


def _get(row: dict | None, key: str) -> float:
    return row.get(key, float("nan")) if row else float("nan")


def neighbour_note(rows: list[dict]) -> str:
    """How much CPU processes other than the benchmark's took during these runs (the machine is shared)."""
    others = [r["cpu_percent"].get("other", float("nan")) for r in rows if "cpu_percent" in r]
    others = [o for o in others if math.isfinite(o)]
    if not others:
        return ""
    return (f"Other processes during these runs: at most {max(others):.0f} % of a core "
            f"(median {sorted(others)[len(others) // 2]:.0f} %).")


def latency_section(rows: list[dict]) -> str:
    body = [[r["relay"], r["clients"], r["received"], r["lost"], r["p50_ms"], r["p90_ms"], r["p99_ms"],
             r["p999_ms"], r["max_ms"], r["cpu_percent"]["relay"]] for r in rows]
    out = ["### 1. Transport latency (1 KB frames, 100 fps, publisher → relay → subscriber)", "",
           table(["relay", "clients", "frames", "lost", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
                  "relay CPU %"], body), "", neighbour_note(rows), ""]
    pairs = [
        ("Swift stack / Rust stack", _find(rows, relay="swift", clients="swift"), _find(rows, relay="rust", clients="rust")),
        ("Swift relay / Rust relay (Swift clients)", _find(rows, relay="swift", clients="swift"),
         _find(rows, relay="rust", clients="swift")),
        ("Swift relay / Rust relay (Rust clients)", _find(rows, relay="swift", clients="rust"),
         _find(rows, relay="rust", clients="rust")),
        ("Swift clients / Rust clients (Swift relay)", _find(rows, relay="swift", clients="swift"),
         _find(rows, relay="swift", clients="rust")),
    ]
    ratios = [[name, ratio(_get(a, "p50_ms"), _get(b, "p50_ms")), ratio(_get(a, "p99_ms"), _get(b, "p99_ms"))]
              for name, a, b in pairs]
    out += [table(["ratio (lower is better for Swift)", "p50", "p99"], ratios), ""]
    return "\n".join(out)


def throughput_section(rows: list[dict]) -> str:
    body = [[r["relay"], r["clients"], r["mb_per_s"], " / ".join(fmt(v, 1) for v in r["runs_mb_per_s"]), r["lost"],
             r["cpu_percent"]["relay"], r["mb_per_relay_cpu_s"], r["cpu_percent"]["publisher"],
             r["cpu_percent"]["subscriber"]] for r in rows]
    out = ["### 2. Throughput (100 KB frames, as fast as the subscriber acknowledges, one subscriber)", "",
           table(["relay", "clients", "MB/s (median)", "runs MB/s", "lost (all runs)", "relay CPU %",
                  "MB per relay CPU-s", "pub CPU %", "sub CPU %"], body), "", neighbour_note(rows), ""]
    pairs = [
        ("Swift relay / Rust relay (Swift clients)", _find(rows, relay="swift", clients="swift"),
         _find(rows, relay="rust", clients="swift")),
        ("Swift relay / Rust relay (Rust clients)", _find(rows, relay="swift", clients="rust"),
         _find(rows, relay="rust", clients="rust")),
        ("Swift stack / Rust stack", _find(rows, relay="swift", clients="swift"), _find(rows, relay="rust", clients="rust")),
    ]
    out += [table(["ratio (higher is better for Swift)", "MB/s", "MB per relay CPU-s"],
                  [[n, ratio(_get(a, "mb_per_s"), _get(b, "mb_per_s")),
                    ratio(_get(a, "mb_per_relay_cpu_s"), _get(b, "mb_per_relay_cpu_s"))] for n, a, b in pairs]), ""]
    return "\n".join(out)


def webtransport_section(wt: dict, latency_rows: list[dict], throughput_rows: list[dict]) -> str:
    """WebTransport rows beside the raw QUIC ones of the same run."""
    body = []
    for r in wt.get("latency", []):
        raw = _find(latency_rows, relay=r["relay"], clients=r["clients"])
        t = _find(wt.get("throughput", []), relay=r["relay"], clients=r["clients"])
        raw_t = _find(throughput_rows, relay=r["relay"], clients=r["clients"])
        body.append([r["relay"], r["clients"], r["lost"], _get(raw, "p50_ms"), r["p50_ms"], _get(raw, "p99_ms"),
                     r["p99_ms"], ratio(r["p50_ms"], _get(raw, "p50_ms")), _get(raw_t, "mb_per_s"),
                     _get(t, "mb_per_s"), ratio(_get(t, "mb_per_s"), _get(raw_t, "mb_per_s")),
                     _get(t, "lost")])
    out = ["### 1b. WebTransport (https://, HTTP/3 on the same UDP port) beside raw QUIC (moql://)", "",
           table(["relay", "clients", "lost (latency)", "QUIC p50 ms", "WT p50 ms", "QUIC p99 ms", "WT p99 ms",
                  "p50 WT/QUIC", "QUIC MB/s", "WT MB/s", "MB/s WT/QUIC", "lost (throughput)"], body), "",
           "Same cases as 1 and 2 (latency: 1 KB at 100 fps; throughput: 100 KB frames, acknowledged window; one "
           "WebTransport run per pair), every client dialling https:// and the relay pinned by fingerprint.", ""]
    return "\n".join(out)


def websocket_section(ws: dict, latency_rows: list[dict], throughput_rows: list[dict], wt: dict) -> str:
    """WebSocket rows beside the raw QUIC and WebTransport ones of the same run (Swift relay)."""
    body = []
    for r in ws.get("latency", []):
        scheme = r.get("scheme", "ws")
        raw = _find(latency_rows, relay=r["relay"], clients=r["clients"])
        wtl = _find(wt.get("latency", []), relay=r["relay"], clients=r["clients"])
        t = _find(ws.get("throughput", []), relay=r["relay"], clients=r["clients"], scheme=scheme) or (
            _find(ws.get("throughput", []), relay=r["relay"], clients=r["clients"]) if scheme == "ws" else None)
        raw_t = _find(throughput_rows, relay=r["relay"], clients=r["clients"])
        wt_t = _find(wt.get("throughput", []), relay=r["relay"], clients=r["clients"])
        body.append([f"{scheme}://", r["relay"], r["clients"], r["lost"], _get(raw, "p50_ms"), _get(wtl, "p50_ms"),
                     r["p50_ms"], _get(raw, "p99_ms"), r["p99_ms"], ratio(r["p50_ms"], _get(raw, "p50_ms")),
                     _get(raw_t, "mb_per_s"), _get(wt_t, "mb_per_s"), _get(t, "mb_per_s"),
                     ratio(_get(t, "mb_per_s"), _get(raw_t, "mb_per_s")), _get(t, "lost")])
    out = ["### 1c. WebSocket (ws:// and wss://, qmux on the relay's TCP port) beside raw QUIC and WebTransport", "",
           table(["url", "relay", "clients", "lost (latency)", "QUIC p50 ms", "WT p50 ms", "WS p50 ms", "QUIC p99 ms",
                  "WS p99 ms", "p50 WS/QUIC", "QUIC MB/s", "WT MB/s", "WS MB/s", "MB/s WS/QUIC",
                  "lost (throughput)"], body), "",
           "Same cases as 1 and 2, every client dialling ws://, then wss:// pinned to the relay's certificate "
           "(Rust clients with their WebSocket fallback enabled). Swift relay only: the PyPI build of moq-dev's "
           "server does not listen on TCP.", ""]
    return "\n".join(out)


def openloop_section(rows: list[dict]) -> str:
    body = [[r["relay"], r["clients"], r["sent"], r["received"], r["delivered_percent"],
             " / ".join(fmt(v, 1) for v in r["runs_delivered_percent"]), r["out_of_order"],
             r["group_errors"], "yes" if r["session_kept"] else f"no ({r['end']})", r["publish_mb_per_s"],
             r["transfer_s"], r["mb_per_s"], r["cpu_percent"]["relay"], r["relay_rss_mb"]] for r in rows]
    out = ["### 2b. Open loop (100 KB single-frame groups as fast as the publisher writes; subscriber budget 10 s; "
           "median of the runs)", "",
           table(["relay", "clients", "groups sent", "received", "delivered % (median)", "runs delivered %",
                  "out of order (all runs)", "group errors",
                  "session kept (all runs)", "written MB/s", "transfer s", "delivered MB/s", "relay CPU %", "relay RSS MB"],
                 body), "",
           neighbour_note(rows), ""]
    pairs = [
        ("Swift relay / Rust relay (Rust clients)", _find(rows, relay="swift", clients="rust"),
         _find(rows, relay="rust", clients="rust")),
        ("Swift relay / Rust relay (Swift clients)", _find(rows, relay="swift", clients="swift"),
         _find(rows, relay="rust", clients="swift")),
    ]
    out += [table(["ratio (higher is better for Swift)", "delivered %", "delivered MB/s"],
                  [[n, ratio(_get(a, "delivered_percent"), _get(b, "delivered_percent")),
                    ratio(_get(a, "mb_per_s"), _get(b, "mb_per_s"))] for n, a, b in pairs]), ""]
    out += ["Transfer: from the publisher's first write to the subscriber's last arrival. An open-loop Swift "
            "publisher writes far faster than any link; its own track cache (64 MiB) then keeps the newest groups "
            "and the oldest never leave it, which is what its delivered % measures.", ""]
    return "\n".join(out)


def _relay_label(row: dict) -> str:
    if row["relay"] != "swift":
        return "Rust"
    loops = row.get("loops") or 1
    return f"Swift, {loops} loop{'s' if loops != 1 else ''}"


def fanout_section(rows: list[dict]) -> str:
    counts = sorted({r["subscribers"] for r in rows})
    body = []
    for n in counts:
        rust = _find(rows, relay="rust", subscribers=n)
        for row in [r for r in rows if r["subscribers"] == n]:
            body.append([n, _relay_label(row), _get(row, "delivery_percent"), _get(row, "late_percent"),
                         _get(row, "relay_cpu_percent"), _get(row, "relay_cores_per_gbps"), _get(row, "p50_ms"),
                         _get(row, "p99_ms"), _get(row, "relay_kib_per_subscriber"),
                         row.get("cpu_percent", {}).get("subscribers", float("nan")),
                         ratio(_get(row, "relay_cpu_percent"), _get(rust, "relay_cpu_percent"))
                         if row["relay"] == "swift" else "-"])
    header = ["subscribers", "relay", "delivered %", "> 1 s late %", "relay CPU %", "relay cores per Gbit/s",
              "p50 ms", "p99 ms", "relay KB/sub", "load generator CPU %", "relay CPU / Rust's"]
    mbit = (rows[0].get("bitrate_bps", 4_000_000) if rows else 4_000_000) / 1e6
    largest = []
    for label in sorted({_relay_label(r) for r in rows}):
        held = [r["subscribers"] for r in rows if _relay_label(r) == label and _get(r, "p99_ms") <= 20
                and _get(r, "delivery_percent") >= 100]
        largest.append(f"{label}: {max(held) if held else 'none of ' + ', '.join(map(str, counts))}")
    return "\n".join([f"### 3. Fan-out (one {mbit:g} Mbit/s broadcast, 30 fps, a group per second; Swift load generator)",
                      "", "Relay KB/sub: the relay's RSS growth from before the first subscriber to the end of the "
                      "broadcast, per subscriber. Relay cores per Gbit/s: the relay's CPU (cores) over what it "
                      "delivered. Loops: `swiftmoq relay --threads`; the load generator (all subscribers in one "
                      "Swift process) shares the 2 cores.", "",
                      table(header, body), "",
                      "Largest fan-out run that held p99 ≤ 20 ms with every frame delivered: " + "; ".join(largest)
                      + ".", "", neighbour_note(rows), ""])


def cluster_section(rows: list[dict]) -> str:
    body = [[r["subscribers"], "S1 → S2 (linked)" if r["topology"] == "cluster" else "one relay",
             _get(r, "delivery_percent"), _get(r, "late_percent"), _get(r, "p50_ms"), _get(r, "p99_ms"),
             _get(r, "relay_cpu_percent"), r.get("edge_cpu_percent", float("nan")),
             r.get("cpu_percent", {}).get("subscribers", float("nan"))] for r in rows]
    header = ["subscribers", "where", "delivered %", "> 1 s late %", "p50 ms", "p99 ms",
              "publisher's relay CPU %", "viewers' relay CPU %", "load generator CPU %"]
    return "\n".join(["### 3b. Cluster: viewers on S2 of a publisher on S1 (Swift relays linked by --cluster-connect)",
                      "", "The fan-out's broadcast; beside it, the same subscribers on the publisher's relay.", "",
                      table(header, body), "", neighbour_note(rows), ""])


def gst_section(gst: dict, latency_rows: list[dict]) -> str:
    raw = _find(latency_rows, relay="swift", clients="swift")
    cpu = gst["cpu_percent"]
    body = [["GStreamer: appsrc ! moqsink → moqsrc ! appsink (1080p30 H.264)", gst["p50_ms"], gst["p99_ms"],
             cpu["publisher"], cpu["subscriber"], cpu["relay"]]]
    if raw:
        body.append(["raw track, Swift clients (case 1)", raw["p50_ms"], raw["p99_ms"], raw["cpu_percent"]["publisher"],
                     raw["cpu_percent"]["subscriber"], raw["cpu_percent"]["relay"]])
    out = ["### 4. GStreamer path (Swift relay)", "",
           table(["path", "p50 ms", "p99 ms", "publisher CPU %", "subscriber CPU %", "relay CPU %"], body), "",
           f"Stream: {gst['stream_kbps']} kbit/s, {gst['frames']} frames measured; x264enc ultrafast encoding of the "
           f"clip costs {gst['encoder_cpu_percent']} % of a core at 30 fps (not in the publisher's figure).",
           f"Rust GStreamer path: {gst['rust_plugin']}; compared with the raw-track path instead.",
           neighbour_note([gst]), ""]
    if raw:
        out.insert(-1, f"GStreamer / raw-track ratio: p50 {fmt(ratio(gst['p50_ms'], raw['p50_ms']))}, "
                       f"p99 {fmt(ratio(gst['p99_ms'], raw['p99_ms']))}.")
    return "\n".join(out)


def memory_section(rows: list[dict]) -> str:
    body = []
    for r in rows:
        for proc in ("subscriber", "relay"):
            m = r.get(proc)
            if m:
                body.append([r["stack"], proc, m["groups_measured"], m["start_mb"], m["end_mb"], m["growth_mb"],
                             m["max_growth_mb"]])
    return "\n".join(["### 5. Memory (RSS over one-frame groups at 1000 groups/s, after a warm-up)", "",
                      table(["stack", "process", "groups", "start MB", "end MB", "growth MB", "max growth MB"], body), ""])


def targets(results: dict) -> list[dict]:
    """The issue's targets, each with the measured value and whether it is met (None: not measured)."""
    out = []
    cases = results.get("cases", {})
    lat = cases.get("latency")
    if lat:
        s, r = _find(lat, relay="swift", clients="swift"), _find(lat, relay="rust", clients="rust")
        value = ratio(_get(s, "p50_ms"), _get(r, "p50_ms"))
        out.append({"target": "latency p50 ≤ 0.8× the Rust path", "value": value, "met": value <= 0.8})
        out.append({"target": "latency p99 ≤ 3 ms (Swift path)", "value": _get(s, "p99_ms"), "met": _get(s, "p99_ms") <= 3})
    thr = cases.get("throughput")
    if thr:
        value = ratio(_get(_find(thr, relay="swift", clients="swift"), "mb_per_s"),
                      _get(_find(thr, relay="rust", clients="swift"), "mb_per_s"))
        out.append({"target": "relay throughput ≥ 1.3× the Rust relay (same Swift clients)", "value": value,
                    "met": value >= 1.3})
    ol = cases.get("openloop")
    if ol:
        row = _find(ol, relay="swift", clients="rust")
        value = _get(row, "delivered_percent")
        kept = bool(row and row["session_kept"] and row["out_of_order"] == 0)
        out.append({"target": "open loop through the Swift relay: a Rust subscriber keeps its session, ≥ 97 % in order",
                    "value": value, "met": None if row is None else (kept and value >= 97)})
    if ol:
        s, r = _find(ol, relay="swift", clients="rust"), _find(ol, relay="rust", clients="rust")
        value = ratio(_get(s, "mb_per_s"), _get(r, "mb_per_s"))
        out.append({"target": "open loop, Rust clients: Swift relay ≥ 1.3× the Rust relay's delivered MB/s",
                    "value": value, "met": value >= 1.3})
    fan = cases.get("fanout")
    if fan:
        # Issue #16: 400 subscribers × 2 Mbit/s (the counts and bitrate the bench ran with).
        n = max((r["subscribers"] for r in fan), default=0)
        mbit = (fan[0].get("bitrate_bps", 0) / 1e6) if fan else 0
        row = _find(fan, relay="swift", subscribers=n, loops=1) or _find(fan, relay="swift", subscribers=n)
        label = f"fan-out {n} × {mbit:g} Mbit/s (Swift relay, one loop)"
        out.append({"target": f"{label}: 0 % loss", "value": _get(row, "delivery_percent"),
                    "met": None if row is None else _get(row, "delivery_percent") >= 100})
        out.append({"target": f"{label}: p99 ≤ 20 ms", "value": _get(row, "p99_ms"),
                    "met": None if row is None else _get(row, "p99_ms") <= 20})
        out.append({"target": f"{label}: relay ≤ 40 % of a core", "value": _get(row, "relay_cpu_percent"),
                    "met": None if row is None else _get(row, "relay_cpu_percent") <= 40})
        out.append({"target": f"{label}: relay memory ≤ 100 KB per connection",
                    "value": _get(row, "relay_kib_per_subscriber"),
                    "met": None if row is None else _get(row, "relay_kib_per_subscriber") <= 100})
    glass = cases.get("glass")
    if glass:
        row = next((g for g in glass if g["latency"] == "default"), None)
        value = row["total"]["p50_ms"] if row else float("nan")
        out.append({"target": "glass to glass p50 ≤ 50 ms at moqsrc's defaults (1080p30, loopback)", "value": value,
                    "met": None if row is None else value <= 50})
    join = (cases.get("join") or {}).get("modes", {})
    video_rows = join.get("video", {}).get("gops", {})
    if video_rows:
        one = video_rows.get("1")
        if one:
            out.append({"target": "joining viewers, GOP 1 s: glass to glass p50 ≤ 60 ms at moqsrc's defaults",
                        "value": one["video"]["p50_ms"], "met": one["video"]["p50_ms"] <= 60})
            out.append({"target": "joining viewers, GOP 1 s: glass to glass p99 ≤ 150 ms",
                        "value": one["video"]["p99_ms"], "met": one["video"]["p99_ms"] <= 150})
        worst = max((r["video"]["p50_ms"] for r in video_rows.values()), default=float("nan"))
        out.append({"target": "joining viewers: glass to glass p50 ≤ 100 ms whatever the GOP",
                    "value": worst, "met": worst <= 100})
    ladder_rows = (cases.get("ladder") or {}).get("rows", [])
    if ladder_rows:
        swift = ladder_rows[0]
        out.append({"target": "adaptive bitrate at moqsrc's defaults, the cap coming at once on a 0.5 s queue: "
                              "longest stall ≤ 200 ms (#23's bound, met by the fault matrix at latency=300)",
                    "value": swift["longest_stall_ms"], "met": swift["longest_stall_ms"] <= 200})
        out.append({"target": "adaptive bitrate through the changing cap: no audio lost (2+ frames together)",
                    "value": swift["audio_missing_ms"], "met": swift["audio_missing_ms"] == 0})
        for fixed in ladder_rows[1:]:
            out.append({"target": f"adaptive bitrate: stall ratio ≤ moq-dev's subscriber at {fixed['rendition']}",
                        "value": f"{swift['stall_ratio_percent']} % vs {fixed['stall_ratio_percent']} %",
                        "met": swift["stall_ratio_percent"] <= fixed["stall_ratio_percent"]})
    av_rows = join.get("av", {}).get("gops", {})
    if av_rows:
        rendered = sum(r["audio_rendered_ms"] for r in av_rows.values())
        pushed = sum(r["audio_published_ms"] for r in av_rows.values())
        breaks = sum(r["discontinuities"] + r["resyncs"] + r["silence_gaps"] for r in av_rows.values())
        value = 100 * rendered / pushed if pushed else float("nan")
        # Every frame: what is missing must be less than one 20 ms frame over all joins (the tone's
        # measure is in fractions of a millisecond).
        out.append({"target": "joining viewers: 100 % of audio frames rendered once (no break, no resync)",
                    "value": round(value, 2), "met": pushed - rendered < 20 and breaks == 0})
        backs = [s["back_s"] for r in av_rows.values() for s in r.get("stalls", {}).values()]
        if backs:
            value = max(float("inf") if b != b else b for b in backs)  # never back: not met
            out.append({"target": "after a 1 s stall, back within 50 ms of the latency before it in ≤ 10 s",
                        "value": value, "met": value <= 10})
    ttff = cases.get("ttff")
    if ttff:
        value = ttff["swift"]["p50_ms"]
        out.append({"target": "time to first frame p50 ≤ 300 ms (moqsrc, default settings)", "value": value,
                    "met": value <= 300})
    mem = cases.get("memory")
    if mem:
        row = _find(mem, stack="swift")
        growth = max(_get(row.get(p) if row else None, "growth_mb") for p in ("subscriber", "relay"))
        out.append({"target": "memory growth ≤ 2 MB over 50,000 groups (Swift subscriber and relay)",
                    "value": growth, "met": growth <= 2})
    lf = (cases.get("longform") or {}).get("modes", {}).get("long-form")
    if lf:
        out.append({"target": "long-form: a 10 s outage (longer than QUIC's idle timeout) is not heard",
                    "value": lf["longest_gap_free_s"], "met": lf["longest_gap_free_s"] >= 10})
        out.append({"target": "long-form: the buffer fills faster than real time (fill rate > 1×)",
                    "value": lf["fill_rate"], "met": lf["fill_rate"] > 1})
    for t in out:
        if isinstance(t["value"], float) and not math.isfinite(t["value"]):
            t["met"] = None
    return out


def ttff_section(ttff: dict) -> str:
    s, e, r = ttff["swift"], ttff["swift_element"], ttff["rust"]
    body = [["SwiftMoQ: moqsrc ! decodebin ! appsink sync=true (start → first frame rendered)", s["p50_ms"], s["p90_ms"],
             s["max_ms"]],
            ["  of which moqsrc: start → first video buffer pushed (its stats)", e["p50_ms"], e["p90_ms"], e["max_ms"]],
            ["moq-dev: watch (connect → first decoded frame)", r["p50_ms"], r["p90_ms"], r["max_ms"]]]
    return "\n".join([f"### 4c. Time to first frame ({ttff['runs']} players each, 1080p30 H.264, a GOP per second, "
                      "Swift relay)", "", table(["player", "p50 ms", "p90 ms", "max ms"], body), "",
                      f"Swift/Rust p50: {fmt(ratio(s['p50_ms'], r['p50_ms']))}.", neighbour_note([ttff]), ""])


def glass_section(rows: list[dict]) -> str:
    order = ["source", "encode", "transport", "decode", "render_wait"]
    names = {"source": "source (frame period until pushed)", "encode": "x264enc zerolatency",
             "transport": "moqsink → relay → moqsrc", "decode": "decodebin", "render_wait": "jitter buffer + render wait"}
    body = []
    for row in rows:
        setting = {"default": "defaults (latency-mode=auto: adaptive)"}.get(row["latency"], None)
        if setting is None:
            setting = (f"latency-mode=fixed latency={row['latency'][len('fixed-'):]}"
                       if row["latency"].startswith("fixed-") else f"latency={row['latency']}")
        margin = f", margin {fmt(row['margin_ms'])} ms, {row['retargets']} retargets" if row.get("margin_ms") is not None else ""
        label = f"moqsrc {setting} (pipeline latency {fmt(row['player_latency_ms'])} ms{margin})"
        body.append([label, "glass to glass", row["total"]["p50_ms"], row["total"]["p90_ms"], row["total"]["max_ms"]])
        for stage in order:
            s = row["stages"].get(stage)
            if s:
                body.append(["", names[stage], s["p50_ms"], s["p90_ms"], s["max_ms"]])
    return "\n".join(["### 4d. Glass to glass (1080p30 H.264 with a clock overlay, one process, Swift relay)", "",
                      table(["player", "stage", "p50 ms", "p90 ms", "max ms"], body), "",
                      "The sink is fakesink sync=true (no display here): it renders at the same clock time a video "
                      "sink would, without the display's own refresh.", neighbour_note(rows), ""])


def join_section(join: dict) -> str:
    """Case 4e: viewers joining a running broadcast."""
    body = []
    for mode, label in (("video", "video only"), ("av", f"video + audio ({join['audio_buffer_ms']} ms sound card)")):
        for gop, row in join.get("modes", {}).get(mode, {}).get("gops", {}).items():
            audio = (f"{row['audio_rendered_ms']} / {row['audio_published_ms']} ms, {row['discontinuities']} breaks, "
                     f"{row['resyncs']} resyncs" if mode == "av" else "–")
            body.append([label, f"{gop} s", row["joins"], row["video"]["p50_ms"], row["video"]["p99_ms"],
                         row["per_join_p50"]["p99_ms"], row["first_frame_glass"]["p50_ms"],
                         row["time_to_first_frame"]["p50_ms"],
                         row["audio"]["p50_ms"] if mode == "av" else "–", audio])
    out = ["### 4e. Joining a running broadcast (720p30 H.264 + Opus sine, random GOP phases, Swift relay, one process)",
           "", table(["viewers", "GOP", "joins", "glass p50 ms", "glass p99 ms", "worst join's p50 ms",
                      "first frame's glass ms", "time to first frame ms", "audio glass p50 ms",
                      "audio rendered / published"], body), ""]
    for gop, row in join.get("modes", {}).get("av", {}).get("gops", {}).items():
        for kind, stall in row.get("stalls", {}).items():
            series = stall["series"]
            samples = ", ".join(f"{t:g} s: {g:g}" for t, g in series[:: max(1, len(series) // 10)])
            what = "delay spike (nothing for it, then everything that late, in order)" if kind == "spike" else kind
            out.append(f"Stall ({stall['stall_s']:g} s {what}, GOP {gop} s): glass to glass before "
                       f"{stall['before_ms']} ms; back within 50 ms of it {fmt(stall['back_s'])} s after the path "
                       f"returned ({stall['catch_up_drops']} audio frames dropped by catch-up). After the stall "
                       f"(s after: ms): {samples}.")
    out += ["", "Glass to glass: capture (the publisher's running time) to render (the sink renders at the buffer's "
            "running time plus the pipeline latency, or at once when it arrives later). With audio every sink waits "
            "for the sound card's buffer too. Audio rendered: tone measured by moqtestaudiosink against what was "
            "published from the first frame moqsrc pushed to the last.", ""]
    return "\n".join(out)


def ladder_section(ladder: dict) -> str:
    """Case 4f: adaptive bitrate beside fixed renditions, through one changing cap."""
    body = []
    for r in ladder["rows"]:
        shares = ", ".join(f"{name} {share:g} %" for name, share in r["renditions"].items())
        body.append([r["player"], r["rendition"], f"{r['played_percent']} % ({r['frames']}/{r['published']})",
                     f"{r['stalls']} ({r['stall_ratio_percent']} %)", r["longest_stall_ms"],
                     f"{r['latency']['p50_ms']} / {r['latency']['p99_ms']}",
                     f"{r['audio_missing_ms']} ({r['audio_single_drops']} single frames)",
                     f"{r['switches_down']} / {r['switches_up']}", shares, r["errors"]])
    return "\n".join([
        f"### 4f. Adaptive bitrate: a ladder of {ladder['kbps']} kbit/s through a cap of {ladder['caps']} kbit/s "
        f"({ladder['phase_s']} s; 640×360 / 480×270 / 320×180 H.264 + Opus, Swift relay, one process)", "",
        table(["player", "rendition", "video frames", "stalls > 100 ms (ratio)", "longest stall ms",
               "latency p50 / p99 ms", "audio lost ms (single frames dropped)", "switches down / up", "time per rendition", "errors"],
              body), "",
        "Each player has its own leg through a UDP proxy, capped alike at the same moments (100 KB bottleneck "
        "queue). moqsrc at its defaults, video decoded and rendered on the clock, audio into an appsink on the "
        "clock; moq-dev's subscriber (moq-ffi 0.4.18's `watch`) decodes one fixed rendition and the audio, frames "
        "counted as decoded (its max-age 10 s: it never skips, so what the path cannot carry shows as latency). "
        "Latency: capture (the publisher's running time) to the player. Audio lost: publisher-time holes of two "
        "20 ms frames or more in what the player had; single frames are catch-up's drops (moqsrc takes added delay "
        "back at quiet moments, at most one frame in five).", ""])


def longform_section(longform: dict) -> str:
    """Case 4b: long-form against live playback of the same broadcast."""
    body = []
    for mode, row in longform["modes"].items():
        outages = ", ".join(f"{o['seconds']:g} s {'ok' if o['gap_free'] else 'gap'}" for o in row["outages"])
        body.append([mode, row["startup_ms"], row["fill_rate"], row["filled_ms"], row["buffered_ms"],
                     row["longest_gap_free_s"], outages])
    long_row, live_row = longform["modes"].get("long-form"), longform["modes"].get("live")
    out = [f"### 4b. Long-form listening (Opus, {longform['buffer_s']:g} s buffer-duration, blackholes on the player's path)",
           "", table(["mode", "startup ms", "fill rate ×", "filled in ms", "buffered ms", "longest gap-free outage s",
                      "outages (in order)"], body), "",
           "Startup: player start to the first sample rendered (sync=true, the pipeline latency included). Fill rate: "
           "media received per second until 90 % of the buffer-duration had arrived (live: of what the first seconds brought). An outage is gap-free when the "
           "sample counter (publisher timestamps, 20 ms frames) has no hole or repeat; the ladder stops at the first gap. "
           "moq-dev's moqsrc has no long-form mode: live is its behaviour. live: moqsrc's defaults (adaptive latency, "
           "no margin until something is late); live-fixed-100: latency-mode=fixed latency=100, the default before "
           "issue #16."]
    if long_row and live_row and live_row["longest_gap_free_s"] > 0:
        out.append(f"Long-form / live longest gap-free outage: "
                   f"{fmt(ratio(long_row['longest_gap_free_s'], live_row['longest_gap_free_s']))}.")
    out.append("")
    return "\n".join(out)


def ietf_section(ietf: dict) -> str:
    """IETF MoQ Transport legs beside moq-lite, all through moq-dev's relay."""
    lite_l = _find(ietf.get("latency", []), leg="moq-lite")
    lite_t = _find(ietf.get("throughput", []), leg="moq-lite")
    body = []
    for r in ietf.get("latency", []):
        t = _find(ietf.get("throughput", []), leg=r["leg"])
        body.append([r["leg"], r["publisher"], r["subscriber"], r["lost"], r["p50_ms"], r["p99_ms"],
                     ratio(r["p50_ms"], _get(lite_l, "p50_ms")), ratio(r["p99_ms"], _get(lite_l, "p99_ms")),
                     _get(t, "mb_per_s"), ratio(_get(t, "mb_per_s"), _get(lite_t, "mb_per_s")), _get(t, "lost"),
                     _get(t, "mb_per_relay_cpu_s")])
    out = ["### 1d. IETF MoQ Transport (drafts 16 and 14, raw QUIC) beside moq-lite, through moq-dev's relay", "",
           table(["leg", "publisher", "subscriber", "lost (latency)", "p50 ms", "p99 ms", "p50 / moq-lite",
                  "p99 / moq-lite", "MB/s", "MB/s / moq-lite", "lost (throughput)", "MB per relay CPU-s"], body), "",
           "Same cases as 1 and 2 (one throughput run per leg). Ratios are against the Swift moq-lite leg of this "
           "run. moq-dev's relay is the one here that speaks both families: the mixed legs are bridged by it "
           "(moq-dev's clients negotiate moq-lite with it, so the Rust legs are moq-lite).", ""]
    return "\n".join(out)


def render(results: dict) -> str:
    """Every measured case's tables, then the targets."""
    cases = results.get("cases", {})
    parts = [f"## SwiftMoQ vs moq-dev (Rust) — {results['machine']['summary']}", ""]
    if "latency" in cases:
        parts.append(latency_section(cases["latency"]))
    if "throughput" in cases:
        parts.append(throughput_section(cases["throughput"]))
    if "webtransport" in cases:
        parts.append(webtransport_section(cases["webtransport"], cases.get("latency", []), cases.get("throughput", [])))
    if "websocket" in cases:
        parts.append(websocket_section(cases["websocket"], cases.get("latency", []), cases.get("throughput", []),
                                       cases.get("webtransport", {})))
    if "ietf" in cases:
        parts.append(ietf_section(cases["ietf"]))
    if "openloop" in cases:
        parts.append(openloop_section(cases["openloop"]))
    if "fanout" in cases:
        parts.append(fanout_section(cases["fanout"]))
    if "cluster" in cases:
        parts.append(cluster_section(cases["cluster"]))
    if "gst" in cases:
        parts.append(gst_section(cases["gst"], cases.get("latency", [])))
    if "ttff" in cases:
        parts.append(ttff_section(cases["ttff"]))
    if "glass" in cases:
        parts.append(glass_section(cases["glass"]))
    if "join" in cases:
        parts.append(join_section(cases["join"]))
    if "ladder" in cases:
        parts.append(ladder_section(cases["ladder"]))
    if "longform" in cases:
        parts.append(longform_section(cases["longform"]))
    if "memory" in cases:
        parts.append(memory_section(cases["memory"]))
    verdict = {True: "met", False: "NOT met", None: "not measured"}
    parts += ["### Targets", "", table(["target", "measured", "verdict"],
                                       [[t["target"], t["value"], verdict[t["met"]]] for t in results["targets"]]), ""]
    for name, message in results.get("failures", {}).items():
        parts.append(f"- case {name} failed: {message}")
    return "\n".join(parts)
