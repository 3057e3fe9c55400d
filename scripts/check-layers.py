#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering rules of ARCHITECTURE.md, checked on the package's target graph (`make lint`).

Each rule names a target and what it must never reach, directly or through another target.
"""
import json
import pathlib
import re
import subprocess
import sys

RULES = {
    # The wire codec stands alone.
    "MoqWire": {"MoqSync", "MoqModel", "MoqSession", "MoqQUIC", "CNgtcp2", "CGStreamer"},
    # So does MoQ Transport's (it shares moq-lite's primitives, nothing above them).
    "MoqtWire": {"MoqSync", "MoqModel", "MoqSession", "MoqQUIC", "CNgtcp2", "CGStreamer"},
    # Its session core is sans-IO too.
    "MoqtSession": {"MoqQUIC", "CNgtcp2", "CGStreamer", "SwiftMoQ"},
    # The model knows no protocol, no transport and no media framework.
    "MoqModel": {"MoqSession", "MoqQUIC", "CNgtcp2", "CGStreamer"},
    # The session is sans-IO: no sockets, no TLS, no GStreamer.
    "MoqSession": {"MoqQUIC", "CNgtcp2", "CGStreamer", "SwiftMoQ"},
    # The transport carries bytes; it knows nothing of moq-lite's model or session.
    "MoqQUIC": {"MoqWire", "MoqModel", "MoqSession", "CGStreamer"},
    # WebTransport over HTTP/3 is sans-IO framing: no transport, no session, no media.
    "MoqWebTransport": {"MoqQUIC", "CNgtcp2", "MoqSession", "MoqModel", "SwiftMoQ", "CGStreamer"},
    # qmux is sans-IO framing too: no transport, no session, no media.
    "MoqQMux": {"MoqQUIC", "CNgtcp2", "MoqSession", "MoqModel", "SwiftMoQ", "CGStreamer"},
    # The builder is generic: no elements of ours, no QUIC.
    "MoqPipeline": {"GstSwiftMoQ", "SwiftMoQ", "MoqQUIC", "CNgtcp2", "MoqSession"},
    # GStreamer support wraps GStreamer only.
    "GstSupport": {"MoqWire", "MoqSession", "MoqQUIC", "SwiftMoQ", "GstSwiftMoQ"},
    # Caps and catalogs translate; they do not connect.
    "MoqMedia": {"MoqQUIC", "SwiftMoQ", "MoqSession"},
    "MoqCatalog": {"MoqQUIC", "SwiftMoQ", "MoqSession", "CGStreamer"},
    # MPRIS is D-Bus only: no media, no protocol.
    "MoqMPRIS": {"MoqWire", "MoqSession", "MoqQUIC", "SwiftMoQ", "CGStreamer", "GstSwiftMoQ"},
}


def main() -> int:
    described = subprocess.run(
        ["swift", "package", "describe", "--type", "json"], check=True, capture_output=True, text=True
    ).stdout
    targets = {t["name"]: t.get("target_dependencies") or [] for t in json.loads(described)["targets"]}

    def closure(name: str) -> set[str]:
        seen: set[str] = set()
        stack = list(targets.get(name, []))
        while stack:
            dep = stack.pop()
            if dep not in seen:
                seen.add(dep)
                stack.extend(targets.get(dep, []))
        return seen

    failures = []
    for name, forbidden in RULES.items():
        if name not in targets:
            failures.append(f"{name}: no such target (update scripts/check-layers.py)")
            continue
        reached = closure(name) & forbidden
        if reached:
            failures.append(f"{name} must not depend on {', '.join(sorted(reached))}")
    # The fuzzers build every source module as its own module (Makefile: fuzz-build), as SwiftPM
    # does: a source file never needs to ask whether a module of ours can be imported.
    for path in sorted(pathlib.Path("Sources").rglob("*.swift")) + sorted(pathlib.Path("Fuzz").rglob("*.swift")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s*#if\s+canImport\(Moq", line):
                failures.append(f"{path}:{number}: conditional import of our own module (import it plainly)")
    for f in failures:
        print(f"layering: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
