# SPDX-License-Identifier: MIT
"""Child processes of the benchmark: started in their own process group, read as JSON lines,
measured through /proc, and always stopped (atexit, signals, and PR_SET_PDEATHSIG)."""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
_RUNNING: set["Child"] = set()
_LOCK = threading.Lock()


class BenchFailure(Exception):
    """A role failed, timed out, or printed an error event."""


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the orchestrator dies, whatever kills it."""
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Child:
    """One role process: stdout parsed as JSON event lines, stderr kept in a log file."""

    def __init__(self, name: str, argv: list[str], log_dir: Path) -> None:
        self.name = name
        self.argv = argv
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        self._log.write((" ".join(argv) + "\n").encode())
        self._log.flush()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.pid = self.proc.pid
        self.events: list[dict] = []
        self._queue: queue.Queue[dict | None] = queue.Queue()
        with _LOCK:
            _RUNNING.add(self)
        threading.Thread(target=self._read, name=f"read-{name}", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            text = raw.decode(errors="replace").strip()
            if not text:
                continue
            try:
                event = json.loads(text)
            except json.JSONDecodeError:
                event = {"event": "text", "line": text}  # `swiftmoq relay` prints "url …" lines
            if not isinstance(event, dict):
                event = {"event": "text", "line": text}
            self._queue.put(event)
        self._queue.put(None)

    def wait_event(self, name: str, timeout: float, predicate=None) -> dict:
        """The next event called ``name`` (and matching ``predicate``); fails on error events or exit."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BenchFailure(f"{self.name}: no '{name}' event within {timeout:g} s (log: {self.log_path})")
            try:
                event = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if event is None:
                self._queue.put(None)
                raise BenchFailure(
                    f"{self.name}: exited ({self.proc.wait()}) before '{name}' (log: {self.log_path})"
                )
            self.events.append(event)
            if event.get("event") == "error":
                raise BenchFailure(f"{self.name}: {event.get('message')} (log: {self.log_path})")
            if event.get("event") == name and (predicate is None or predicate(event)):
                return event

    def poll_events(self) -> list[dict]:
        """Events that arrived since the last call, without waiting."""
        out = []
        while True:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                return out
            if event is None:
                self._queue.put(None)
                return out
            self.events.append(event)
            out.append(event)

    def cpu_seconds(self) -> float:
        """utime + stime of the process so far, from /proc/<pid>/stat (all its threads)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def rss_kib(self) -> int:
        """Resident set size now, from /proc/<pid>/status (KiB), or -1 once gone."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return -1

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace: float = 3.0) -> None:
        """SIGTERM to the process group, SIGKILL after ``grace`` seconds."""
        if self.proc.poll() is None:
            _signal_group(self.pid, signal.SIGTERM)
            if self.wait_exit(grace) is None:
                _signal_group(self.pid, signal.SIGKILL)
                self.proc.wait()
        with _LOCK:
            _RUNNING.discard(self)
        self._log.close()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def system_busy_seconds() -> float:
    """CPU time all cores have spent busy since boot (the first line of /proc/stat, less idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return (sum(values) - values[3] - values[4]) / CLOCK_TICKS


def own_cpu_seconds() -> float:
    """CPU time of this orchestrator so far."""
    usage = os.times()
    return usage.user + usage.system


class CPUWindow:
    """CPU used by some processes between ``start()`` and ``stop()``, as % of one core, plus ``other``:
    what every other process on the machine used meanwhile (a busy neighbour shows there)."""

    def __init__(self, children: dict[str, Child]) -> None:
        self.children = children
        self._start: dict[str, float] = {}
        self._wall = 0.0
        self._busy = 0.0
        self._own = 0.0
        self.percent: dict[str, float] = {}

    def start(self) -> None:
        self._wall = time.monotonic()
        self._busy = system_busy_seconds()
        self._own = own_cpu_seconds()
        self._start = {k: c.cpu_seconds() for k, c in self.children.items()}

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._wall
        ours = own_cpu_seconds() - self._own
        for key, child in self.children.items():
            used = child.cpu_seconds() - self._start[key]
            ours += used
            self.percent[key] = round(100 * used / wall, 1) if wall > 0 else float("nan")
        other = system_busy_seconds() - self._busy - ours
        self.percent["other"] = round(max(0.0, 100 * other / wall), 1) if wall > 0 else float("nan")
        return self.percent


def wait_until_idle(log, max_busy_percent: float = 25.0, timeout: float = 180.0) -> float:
    """Waits (up to ``timeout``) until the machine is idle for a whole second with none of our roles
    running, i.e. no neighbour is using more than ``max_busy_percent`` of one core. Returns the last
    busy % seen (the run goes ahead after the timeout anyway)."""
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        before, start = system_busy_seconds(), time.monotonic()
        time.sleep(1.0)
        busy = 100 * (system_busy_seconds() - before) / (time.monotonic() - start)
        if busy <= max_busy_percent or time.monotonic() > deadline:
            if announced:
                log(f"machine {'idle' if busy <= max_busy_percent else 'still busy'} ({busy:.0f} % of a core)")
            return round(busy, 1)
        if not announced:
            log(f"another process uses {busy:.0f} % of a core: waiting for it (at most {timeout:g} s)")
            announced = True


def stop_all() -> None:
    """Stops every role still running (newest first)."""
    with _LOCK:
        running = list(_RUNNING)
    for child in reversed(running):
        child.stop(grace=2.0)


def install_cleanup() -> None:
    """Stop every child at exit, and turn SIGTERM/SIGINT/SIGHUP into a clean exit."""
    atexit.register(stop_all)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
