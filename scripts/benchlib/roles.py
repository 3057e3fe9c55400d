# SPDX-License-Identifier: MIT
"""Starting relays and client roles of either stack with the same options.

Swift: `swiftmoq relay`, `moqbench <role>`. Rust: `moqpeer.py relay`, `moqpeer.py bench-<role>`
(moq-dev's implementation from PyPI, driven through its Python bindings). Both take the same
option names except the certificate pin (`--tls-fingerprint` / `--fingerprint`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from .processes import Child

STACKS = ("swift", "rust")


@dataclass(frozen=True)
class Tools:
    """Where the programs are, where logs go, and whether Swift processes run under `perf record`."""

    swiftmoq: Path
    moqbench: Path
    python: str
    moqpeer: Path
    log_dir: Path
    profile_dir: Path | None = None
    # `swiftmoq relay --threads` for every Swift relay that does not set its own (BENCH_RELAY_THREADS;
    # None: the relay's default). A default changes only after the whole bench has run at both.
    relay_threads: int | None = None

    def wrap(self, stack: str, name: str, argv: list[str]) -> list[str]:
        """``argv``, under ``perf record -g`` when profiling a Swift process."""
        if self.profile_dir is None or stack != "swift":
            return argv
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        data = self.profile_dir / f"{name}.data"
        return ["perf", "record", "-F", "999", "-g", "-q", "-o", str(data), "--", *argv]


@dataclass
class Relay:
    """A running relay."""

    stack: str
    url: str
    fingerprint: str
    child: Child


def start_relay(tools: Tools, stack: str, name: str, extra: list[str] | None = None) -> Relay:
    """A fresh relay on 127.0.0.1 with a generated certificate, once it listens (`extra`: more
    `swiftmoq relay` options, Swift only)."""
    if stack == "swift":
        argv = [str(tools.swiftmoq), "relay", "--listen", "127.0.0.1:0", "--tls-generate", "localhost"]
        argv += ["--public", "", "--log-level", "warning", *(extra or [])]
        if tools.relay_threads is not None and "--threads" not in argv:
            argv += ["--threads", str(tools.relay_threads)]
        child = Child(name, tools.wrap(stack, name, argv), tools.log_dir)
        url = child.wait_event("text", 30, lambda e: e["line"].startswith("url "))["line"].split()[1]
        fp = child.wait_event("text", 10, lambda e: e["line"].startswith("fingerprint "))["line"].split()[1]
        return Relay(stack, url, fp, child)
    child = Child(name, [tools.python, str(tools.moqpeer), "relay"], tools.log_dir)
    listening = child.wait_event("listening", 30)
    return Relay(stack, listening["url"].rstrip("/") + "/", listening["fingerprint"], child)


def client_argv(tools: Tools, stack: str, role: str, name: str, relay: Relay, options: dict) -> list[str]:
    """The command line of a client role (publish, subscribe, fanout-subscribers, gst-*)."""
    if stack == "swift":
        argv = [str(tools.moqbench), role, "--url", relay.url, "--tls-fingerprint", relay.fingerprint]
    else:
        argv = [tools.python, str(tools.moqpeer), f"bench-{role}", "--url", relay.url]
        argv += ["--fingerprint", relay.fingerprint]
    for key, value in options.items():
        if value is not None:
            argv += [f"--{key}", str(value)]
    return tools.wrap(stack, name, argv)


def start_client(tools: Tools, stack: str, role: str, name: str, relay: Relay, options: dict) -> Child:
    """Starts a client role."""
    return Child(name, client_argv(tools, stack, role, name, relay, options), tools.log_dir)


def broadcast_name(case: str) -> str:
    """A broadcast path used once (reusing a name while an old session lingers confuses the Rust relay)."""
    return f"bench/{case}-{uuid.uuid4().hex[:8]}"
