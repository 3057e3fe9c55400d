#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Drives the watch page (web/) in headless Chromium for tests.

    python3 Tests/Web/watch_page.py --url 'http://127.0.0.1:PORT/?broadcast=x' \\
        --screenshot out.png --until-video-frames 30 --timeout-s 30

Starts Chromium headless with the DevTools protocol on a pipe (--remote-debugging-pipe: NUL-separated
JSON on the child's fds 3 and 4, no websocket), opens the URL, polls `window.watchState` until
`videoFrames >= N` (and `audioFrames >= M` with --until-audio-frames), then saves a PNG screenshot.

stdout: the final watchState as one JSON line (null if the page never set it).
stderr: the page's console errors and exceptions (all console messages with --verbose), and with
        --verbose Chromium's own log.
Exit status: 0 when the condition was met before the timeout, 1 otherwise, 2 for bad usage.
Chromium runs in its own process group, which is killed on every exit path.
Python 3.11 standard library only.
"""
import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

CHROMIUM_CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]


class DevToolsPipe:
    """The DevTools protocol over --remote-debugging-pipe: we write fd 3, Chromium writes fd 4."""

    def __init__(self, to_browser: int, from_browser: int):
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.next_id = 0
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.responses: dict[int, dict] = {}
        self.events: list[dict] = []
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        buffer = b""
        try:
            while True:
                chunk = os.read(self.from_browser, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                while b"\0" in buffer:
                    raw, buffer = buffer.split(b"\0", 1)
                    try:
                        message = json.loads(raw)
                    except ValueError:
                        continue
                    with self.cond:
                        if "id" in message:
                            self.responses[message["id"]] = message
                        else:
                            self.events.append(message)
                        self.cond.notify_all()
        except OSError:
            pass
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 10.0):
        """Sends a command and waits for its answer; raises on an error answer or timeout."""
        with self.lock:
            self.next_id += 1
            ident = self.next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self.to_browser, data):]
        deadline = time.monotonic() + timeout
        with self.cond:
            while ident not in self.responses:
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise RuntimeError(f"{method}: {'browser gone' if self.closed else 'no answer'}")
                self.cond.wait(left)
            answer = self.responses.pop(ident)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def take_events(self) -> list[dict]:
        with self.lock:
            events, self.events = self.events, []
        return events


def spawn_chromium(binary: str, profile: str, verbose: bool, vlog: int, width: int, height: int, log_file):
    """Starts Chromium with fds 3 (commands in) and 4 (answers out); returns (process, pipe)."""
    cmd_r, cmd_w = os.pipe()  # we write commands, the browser reads fd 3
    out_r, out_w = os.pipe()  # the browser writes fd 4, we read
    flags = [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
        "--disable-extensions", "--disable-background-networking", "--disable-sync", "--mute-audio",
        "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
        "--autoplay-policy=no-user-gesture-required", "--remote-debugging-pipe",
        f"--user-data-dir={profile}", f"--window-size={width},{height}",
    ]
    if verbose:
        flags += ["--enable-logging=stderr", f"--v={vlog}"]

    def child_fds():
        # Runs in the child before exec (and before close_fds): park the pipe ends on high numbers,
        # so that the dup2s onto 3 and 4 cannot clobber one another, then put them in place.
        os.dup2(cmd_r, 100)
        os.dup2(out_w, 101)
        os.dup2(100, 3)
        os.dup2(101, 4)

    process = subprocess.Popen(
        [binary, *flags, "about:blank"],
        stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
        preexec_fn=child_fds, pass_fds=(3, 4), start_new_session=True,
    )
    os.close(cmd_r)
    os.close(out_w)
    return process, DevToolsPipe(cmd_w, out_r)


def kill_group(process: subprocess.Popen):
    """SIGTERM the browser's process group, then SIGKILL whatever is left."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    try:
        os.killpg(process.pid, signal.SIGKILL)  # helpers that outlived the browser, if any
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=3)
    except subprocess.TimeoutExpired:
        pass


def console_lines(events: list[dict], verbose: bool) -> list[str]:
    """Console messages, exceptions and log entries worth showing (errors and warnings unless verbose)."""
    lines = []
    for e in events:
        method, p = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled":
            if verbose or p.get("type") in ("error", "assert"):
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                lines.append(f"console.{p.get('type')}: {text}")
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            text = d.get("exception", {}).get("description") or d.get("text", "")
            lines.append(f"exception: {text} ({d.get('url', '')}:{d.get('lineNumber', '')})")
        elif method == "Log.entryAdded":
            entry = p.get("entry", {})
            if verbose or entry.get("level") == "error":
                lines.append(f"log.{entry.get('level')}: {entry.get('text')} {entry.get('url', '')}".rstrip())
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="the watch page URL, with its query string")
    parser.add_argument("--screenshot", help="PNG file to write at the end")
    parser.add_argument("--until-video-frames", type=int, default=1, help="success once videoFrames >= N")
    parser.add_argument("--until-audio-frames", type=int, default=0, help="and audioFrames >= M")
    parser.add_argument("--timeout-s", type=float, default=30.0)
    parser.add_argument("--poll-ms", type=int, default=200)
    parser.add_argument("--chromium", help="browser binary (default: the first of %s)" % ", ".join(CHROMIUM_CANDIDATES))
    parser.add_argument("--window", default="1280x800", help="viewport WIDTHxHEIGHT")
    parser.add_argument("--verbose", action="store_true", help="Chromium's own log and all console messages on stderr")
    parser.add_argument("--vlog", type=int, default=0, help="Chromium's --v level with --verbose (1 is very chatty)")
    args = parser.parse_args()

    binary = args.chromium or next((c for c in CHROMIUM_CANDIDATES if os.path.exists(c)), None)
    if not binary or not os.path.exists(binary):
        print("watch_page: no Chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    try:
        width, height = (int(v) for v in args.window.lower().split("x"))
    except ValueError:
        print("watch_page: --window must be WIDTHxHEIGHT", file=sys.stderr)
        return 2

    profile = tempfile.mkdtemp(prefix="watch-page-")
    log_file = None if args.verbose else tempfile.TemporaryFile()
    process = None
    state = None
    met = False
    console: list[str] = []
    # A SIGTERM to this script still runs the cleanup below.
    def on_term(*_):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, on_term)
    try:
        process, cdp = spawn_chromium(binary, profile, args.verbose, args.vlog, width, height, log_file)
        deadline = time.monotonic() + args.timeout_s
        target = cdp.call("Target.createTarget", {"url": "about:blank"}, timeout=30)["targetId"]
        session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            cdp.call(domain, session=session)
        cdp.call("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
        navigation = cdp.call("Page.navigate", {"url": args.url}, session=session, timeout=30)
        if navigation.get("errorText"):
            console.append(f"navigation failed: {navigation['errorText']}")
        while True:
            try:
                result = cdp.call("Runtime.evaluate", {
                    "expression": "JSON.stringify(window.watchState ?? null)", "returnByValue": True,
                }, session=session)
                text = result.get("result", {}).get("value")
                state = json.loads(text) if isinstance(text, str) else state
            except (RuntimeError, ValueError):
                pass  # navigating, or the page is busy: try again
            console += console_lines(cdp.take_events(), args.verbose)
            if state and state.get("videoFrames", 0) >= args.until_video_frames \
                    and state.get("audioFrames", 0) >= args.until_audio_frames:
                met = True
                break
            if time.monotonic() >= deadline or process.poll() is not None:
                break
            time.sleep(args.poll_ms / 1000)
        if args.screenshot:
            try:
                shot = cdp.call("Page.captureScreenshot", {"format": "png"}, session=session, timeout=15)
                with open(args.screenshot, "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
            except RuntimeError as e:
                console.append(f"screenshot failed: {e}")
        console += console_lines(cdp.take_events(), args.verbose)
    except KeyboardInterrupt:
        console.append("interrupted")
    except (RuntimeError, OSError) as e:
        console.append(f"driver error: {e}")
    finally:
        if process is not None:
            kill_group(process)
        shutil.rmtree(profile, ignore_errors=True)

    print(json.dumps(state), flush=True)
    for line in console:
        print(line, file=sys.stderr)
    if not met:
        print(f"watch_page: condition not met (videoFrames >= {args.until_video_frames}, "
              f"audioFrames >= {args.until_audio_frames}) within {args.timeout_s:g} s", file=sys.stderr)
        if log_file is not None:
            log_file.seek(0)
            noise = ("dbus/", "zygote_communication", "Fontconfig", "sandbox")
            lines = log_file.read().decode(errors="replace").splitlines()
            tail = "\n".join(l for l in lines if not any(n in l for n in noise))[-4000:].strip()
            if tail:
                print("chromium stderr (tail):\n" + tail, file=sys.stderr)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
