#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""moqpeer: the Rust moq-lite peer that SwiftMoQ's interop tests drive.

Every subcommand talks through moq-dev's own implementation (PyPI ``moq-rs`` over
``moq-ffi``), so a Swift endpoint can be checked against the reference from both sides.

Output contract (what the Swift ``RustPeer`` helper parses):

* stdout carries only events, one JSON object per line, flushed as soon as it is written:
  ``{"event": "<name>", ...}``.
* Logs (ours and the Rust side's, ``--debug`` for every message) go to stderr.
* Exit 0 on success. On failure the last stdout line is ``{"event":"error","message":...}``
  and the exit status is non-zero (1 for a runtime failure or timeout, 2 for bad arguments).
* SIGTERM, SIGINT, SIGHUP, or EOF on a piped stdin stop a subcommand early: it prints
  ``{"event":"stopped","reason":...}`` and exits 0 (for ``relay`` this is the normal end).
  stdin is only watched when it is a pipe or socket, so ``moqpeer relay &`` in a shell
  (stdin = /dev/null) keeps running.

Run ``moqpeer.py <subcommand> --help`` for the arguments; Tests/Interop/README.md lists the
events of every subcommand.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime
import hashlib
import json
import math
import re
import os
import signal
import ssl
import socket
import stat
import struct
import sys
import threading
import time
import uuid

# The Rust tracing subscriber colours its output unless told not to; stderr ends up in
# test failure messages, where escape codes are noise.
os.environ.setdefault("NO_COLOR", "1")

try:
    import moq
except ImportError as exc:  # pragma: no cover - depends on the machine
    sys.stdout.write(
        json.dumps({"event": "error", "message": f"cannot import moq ({exc}); run `make setup`"}) + "\n"
    )
    sys.stdout.flush()
    sys.exit(1)

# Frame timestamps of the raw-track publisher: one frame every 1/30 s.
FRAME_DURATION_US = 33333


# MARK: - Output


_stdout_lock = threading.Lock()


def emit(event: str, **fields) -> None:
    """Write one event line to stdout and flush it at once."""
    line = json.dumps({"event": event, **fields}, separators=(",", ":"), default=str)
    with _stdout_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(message: str) -> None:
    sys.stderr.write(f"[moqpeer {os.getpid()}] {message}\n")
    sys.stderr.flush()


class RustLogTap:
    """Reads the Rust side's log (fd 2) through a pipe and forwards it to the real stderr.

    moq-ffi exposes neither the negotiated version nor the peer's SETUP; its log does
    (``moq_tokio::client: connected version=…``, ``received peer setup setup=…``), so
    ``connect`` watches for those lines. Python's own ``sys.stderr`` bypasses the pipe.
    """

    def __init__(self) -> None:
        self._real = os.dup(2)
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 2)
        os.close(write_fd)
        sys.stderr = open(os.dup(self._real), "w", buffering=1)
        self._lock = threading.Lock()
        self._watchers: list[tuple[re.Pattern, asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._seen: list[str] = []
        threading.Thread(target=self._pump, args=(read_fd,), name="rust-log", daemon=True).start()

    def _pump(self, read_fd: int) -> None:
        with open(read_fd, "rb", buffering=0) as pipe:
            for raw in pipe:
                os.write(self._real, raw)
                line = raw.decode(errors="replace").rstrip("\n")
                with self._lock:
                    self._seen.append(line)
                    watchers = list(self._watchers)
                for pattern, loop, future in watchers:
                    match = pattern.search(line)
                    if match:
                        loop.call_soon_threadsafe(_resolve, future, match.group(1))

    def expect(self, pattern: str) -> asyncio.Future:
        """A future resolved with group 1 of the first log line (past or future) matching ``pattern``."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        regex = re.compile(pattern)
        with self._lock:
            for line in self._seen:
                match = regex.search(line)
                if match:
                    future.set_result(match.group(1))
                    return future
            self._watchers.append((regex, loop, future))
        return future


def _resolve(future: asyncio.Future, value) -> None:
    if not future.done():
        future.set_result(value)


LOG_TAP: RustLogTap | None = None


class PeerError(Exception):
    """A failure with a message meant for the test log."""


PHASE = "starting"


def phase(text: str) -> None:
    """Record what the command is waiting for; a timeout reports it."""
    global PHASE
    PHASE = text
    # Also on stderr, with the time: a test that times out shows where the peer was.
    print(f"[moqpeer {os.getpid()} {time.monotonic():.3f}] {text}", file=sys.stderr, flush=True)


def describe(exc: BaseException) -> str:
    """A one-line description of an exception, including moq-ffi protocol details."""
    details = moq.protocol_error(exc) if isinstance(exc, Exception) else None
    if details is not None:
        scope = getattr(details.scope, "name", details.scope)
        kind = getattr(details.kind, "name", details.kind)
        return f"protocol error: {kind} ({scope.lower()} code {details.code:#x}) {details.message}".strip()
    return f"{type(exc).__name__}: {exc}".strip()


def error_fields(exc: BaseException) -> dict:
    """``message`` plus, for a protocol error, its ``kind``, ``scope`` and wire ``code``."""
    fields: dict = {"message": describe(exc)}
    details = moq.protocol_error(exc) if isinstance(exc, Exception) else None
    if details is not None:
        fields.update(
            kind=getattr(details.kind, "name", str(details.kind)),
            scope=getattr(details.scope, "name", str(details.scope)).lower(),
            code=details.code,
        )
    return fields


def close_reason(exc: BaseException) -> tuple[str, bool]:
    """(description, graceful) of a session's end; CANCEL (code 0) is a normal close."""
    details = moq.protocol_error(exc) if isinstance(exc, Exception) else None
    graceful = details is not None and getattr(details.kind, "name", "") == "CANCEL"
    return describe(exc), graceful


# MARK: - Deterministic payloads


def payload_for(group: int, frame: int, size: int | None) -> bytes:
    """``g{group}f{frame}``, repeated and cut to ``size`` bytes (exactly the tag when size is None)."""
    tag = f"g{group}f{frame}".encode()
    if size is None:
        return tag
    if size <= 0:
        return b""
    return (tag * (size // len(tag) + 1))[:size]


def timestamp_for(group: int, frame: int, frames_per_group: int) -> int:
    return (group * frames_per_group + frame) * FRAME_DURATION_US


def frame_event(kind: str, group: int, index: int, timestamp_us: int, payload: bytes) -> None:
    emit(
        kind,
        group=group,
        index=index,
        timestamp_us=timestamp_us,
        size=len(payload),
        payload=base64.b64encode(payload).decode(),
    )


def unique_name(kind: str) -> str:
    return f"moqpeer-{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


# MARK: - Client helpers


@contextlib.asynccontextmanager
async def make_client(args):
    """A connected ``moq.Client`` (one dial, no reconnect) that closes gracefully on exit.

    ``Client.__aexit__`` only requests the shutdown; waiting for ``closed()`` lets the
    CONNECTION_CLOSE leave before the process exits, so the peer sees a clean close
    instead of an idle timeout.
    """
    kwargs: dict = {"reconnect": False, "websocket_enabled": False}
    if args.websocket_delay_ms is not None:
        # moq-dev's fallback: WebSocket (qmux) raced this long after QUIC (ws:// URLs use only it).
        kwargs["websocket_enabled"] = True
        kwargs["websocket_delay"] = datetime.timedelta(milliseconds=args.websocket_delay_ms)
    if args.insecure:
        kwargs["tls_verify"] = False
    if args.fingerprint:
        kwargs["tls_fingerprints"] = [args.fingerprint.lower().replace(":", "")]
    client = moq.Client(args.url, **kwargs)
    phase(f"connecting to {args.url}")
    await client.__aenter__()
    phase(f"connected to {args.url}")
    session = client.session
    try:
        yield client
    finally:
        session.shutdown()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(session.closed(), 2)
        await client.__aexit__(None, None, None)


async def wait_broadcast(client: moq.Client, path: str) -> moq.BroadcastConsumer:
    """Wait until ``path`` is announced, then return its consumer.

    ``request_broadcast`` raises when nothing serves the path yet, so waiting for the
    announcement lets a subscriber start before its publisher.
    """
    phase(f"waiting for broadcast {path!r} to be announced")
    consumer = await client.announced_broadcast(path).available()
    phase(f"using broadcast {path!r}")
    return consumer


def subscription(args) -> moq.Subscription:
    kwargs = {"priority": args.priority, "max_age_us": args.max_latency_ms * 1000}
    if getattr(args, "group_start", None) is not None:
        kwargs["group_start"] = args.group_start
    if getattr(args, "group_end", None) is not None:
        kwargs["group_end"] = args.group_end
    return moq.Subscription(**kwargs)


def track_info(args) -> moq.TrackInfo | None:
    kwargs = {}
    if args.track_priority is not None:
        kwargs["priority"] = args.track_priority
    if args.max_age_ms is not None:
        kwargs["max_age_us"] = args.max_age_ms * 1000
    return moq.TrackInfo(**kwargs) if kwargs else None


def expect_subscribe(broadcast: str, track: str) -> asyncio.Future | None:
    """Watch the Rust log for the SUBSCRIBE of ``track`` (needs the log tap, see configure_logging)."""
    if LOG_TAP is None:
        return None
    path = "/".join(part for part in broadcast.split("/") if part)
    return LOG_TAP.expect(rf"subscribed started broadcast={re.escape(path)} track={re.escape(track)} ()")


async def wait_subscriber(demand: moq.TrackDemand, subscribed: asyncio.Future | None) -> None:
    """Wait until the track is really subscribed, then emit ``subscriber``.

    ``TrackDemand.used()`` fires on the first TRACK (track-info) request, which a Rust
    subscriber or relay sends just *before* its SUBSCRIBE; groups written in that gap reach
    only subscribers with a latency budget. So also wait for the publisher's own log line
    for the SUBSCRIBE (``subscribed started broadcast=… track=…``).
    """
    phase(f"waiting for a subscriber of track {demand.name!r}")
    await demand.used()
    seen = False
    if subscribed is not None:
        try:
            await asyncio.wait_for(subscribed, 5)
            seen = True
        except asyncio.TimeoutError:
            log("track demand seen, but no SUBSCRIBE in the Rust log within 5 s; writing anyway")
    emit("subscriber", subscribe_seen=seen)


async def sleep_ms(ms: float) -> None:
    if ms > 0:
        await asyncio.sleep(ms / 1000)


# MARK: - relay


async def cmd_relay(args) -> None:
    origin = moq.OriginProducer()
    server = None
    port = args.port
    for attempt in range(5):
        candidate = moq.Server(
            f"{args.host}:{port}", tls_generate=["localhost"], publish=origin, subscribe=origin
        )
        try:
            await candidate.__aenter__()
        except Exception as exc:
            if args.port != 0 or attempt == 4:
                raise PeerError(f"cannot listen on {args.host}:{port}: {describe(exc)}") from exc
            log(f"bind {args.host}:{port} failed ({describe(exc)}); retrying")
            port = free_udp_port(args.host)
            continue
        bound = int(candidate.local_addr.rsplit(":", 1)[1])
        if bound == 0:
            # The server could not tell us its port: pick one ourselves. Another process can
            # take it between our probe and the bind, hence the retries.
            await candidate.__aexit__(None, None, None)
            port = free_udp_port(args.host)
            continue
        server = candidate
        port = bound
        break
    if server is None:
        raise PeerError("could not find a free UDP port")

    sessions: dict[int, moq.Session] = {}
    tasks: set[asyncio.Task] = set()
    counter = 0

    def spawn(coro) -> None:
        task = asyncio.create_task(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def handle(request: moq.Request, sid: int) -> None:
        path = request.path
        if args.reject_path is not None and path.strip("/").startswith(args.reject_path.strip("/")):
            # Refuse the session, as an authenticating relay does.
            try:
                await request.reject(args.reject_code)
            except Exception as exc:
                log(f"reject failed: {describe(exc)}")
            emit("session_rejected", id=sid, path=path, code=args.reject_code)
            return
        try:
            session = await request.accept()
        except Exception as exc:
            emit("session_failed", id=sid, path=path, message=describe(exc))
            return
        sessions[sid] = session  # dropping an accepted session closes it
        emit("session", id=sid, path=path, transport=str(request.transport))
        try:
            await session.closed()
            reason, graceful = None, True
        except Exception as exc:
            reason, graceful = close_reason(exc)
        sessions.pop(sid, None)
        emit("session_closed", id=sid, path=path, graceful=graceful, reason=reason)

    async def watch_announces() -> None:
        # The relay's own view of what is routable: lets a test wait until a publisher's
        # broadcast has reached the relay before starting a subscriber.
        async for update in origin.consume().announced(""):
            emit("announce", path=update.prefix, active=update.active)

    async def link(url: str, fingerprint: str | None) -> None:
        # A cluster link as moq-relay dials one: a client publishing and consuming the relay's one
        # origin, so each side offers everything it knows and subscribes on demand.
        client = moq.Client(
            url, tls_fingerprints=[fingerprint] if fingerprint else None, publish=origin, subscribe=origin,
            websocket_enabled=False,
        )
        try:
            async with client:
                emit("linked", url=url)
                await asyncio.Event().wait()  # held until the relay stops
        except Exception as exc:
            emit("link_failed", url=url, message=describe(exc))

    try:
        spawn(watch_announces())
        for url in args.connect:
            spawn(link(url, args.connect_fingerprint))
        fingerprints = server.cert_fingerprints()
        emit(
            "listening",
            host=args.host,
            port=port,
            fingerprint=fingerprints[0] if fingerprints else None,
            url=f"moql://{args.host}:{port}",
        )
        async for request in server:
            counter += 1
            spawn(handle(request, counter))
    finally:
        for task in list(tasks):
            task.cancel()
        for session in list(sessions.values()):
            with contextlib.suppress(Exception):
                session.shutdown()
        await server.__aexit__(None, None, None)


async def cmd_udp_blackhole(args) -> None:
    """A port where UDP goes nowhere and TCP reaches the target's TCP port: a network that blocks UDP."""
    for _ in range(50):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))  # bound and never read: every datagram is dropped silently
        port = udp.getsockname()[1]

        async def handle(reader, writer):
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", args.target)
            except OSError:
                writer.close()
                return

            async def pipe(src, dst):
                with contextlib.suppress(Exception):
                    while data := await src.read(65536):
                        dst.write(data)
                        await dst.drain()
                with contextlib.suppress(Exception):
                    dst.close()

            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        try:
            server = await asyncio.start_server(handle, "127.0.0.1", port)
        except OSError:
            udp.close()
            continue
        emit("listening", port=port)
        try:
            async with server:
                await server.serve_forever()
        finally:
            udp.close()
        return
    raise SystemExit("no port free for both UDP and TCP")


async def cmd_https_get(args) -> None:
    """One HTTPS GET with Python's own TLS (an independent client), the server's certificate pinned."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # checked below against --fingerprint
    reader, writer = await asyncio.open_connection(args.host, args.port, ssl=context)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    fingerprint = hashlib.sha256(der).hexdigest()
    if fingerprint != args.fingerprint.lower():
        raise SystemExit(f"certificate sha256 {fingerprint}, expected {args.fingerprint}")
    writer.write(f"GET {args.path} HTTP/1.1\r\nHost: {args.host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    answer = await reader.read()  # the server closes after its answer (with a TLS close_notify)
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    emit("response", status=status, body=body.decode(errors="replace"), tls=writer.get_extra_info("ssl_object").version())
    writer.close()


def free_udp_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


# MARK: - connect


async def cmd_connect(args) -> None:
    version = LOG_TAP.expect(r"moq_tokio::client: connected version=(\S+)")
    server_setup = LOG_TAP.expect(r"received peer setup setup=(.*)$")
    phase(f"connecting to {args.url}")
    async with make_client(args) as client:
        session = client.session
        # The client counts itself connected before the server's SETUP arrives (lite-05/06):
        # wait for it, so success means the whole handshake happened.
        try:
            setup = await asyncio.wait_for(server_setup, args.setup_timeout_s)
        except asyncio.TimeoutError:
            raise PeerError(f"connected, but no SETUP from the server within {args.setup_timeout_s:g} s") from None
        negotiated = version.result() if version.done() else None
        emit(
            "connected",
            url=args.url,
            version=negotiated,
            server_setup=setup,
            epoch=session.epoch(),
            rtt_us=session.stats().rtt_us,
        )
        await sleep_ms(args.hold_ms)
    emit("closed")


async def announce_track(client, broadcast_name: str, args):
    """Publishes and announces `broadcast_name` with one track (`--track`), emits `announced`,
    and with `--wait-subscriber` waits for its first subscriber. Returns (broadcast, track)."""
    broadcast = client.create_broadcast(broadcast_name)
    track = broadcast.publish_track(args.track, track_info(args))
    demand = track.demand()
    subscribed = expect_subscribe(broadcast_name, args.track)
    broadcast.announce()
    emit("announced", broadcast=broadcast_name, track=args.track)
    if args.wait_subscriber:
        await wait_subscriber(demand, subscribed)
    return broadcast, track


# MARK: - publish (raw track)


async def cmd_publish(args) -> None:
    broadcast_name = args.broadcast or unique_name("broadcast")
    frames_per_group = args.frames_per_group
    async with make_client(args) as client:
        broadcast, track = await announce_track(client, broadcast_name, args)
        if args.go_file:
            # The test says when to start (e.g. once every subscriber reached the relay).
            while not os.path.exists(args.go_file):
                await asyncio.sleep(0.01)
        group_index = 0
        started_ns = time.monotonic_ns()
        while args.groups <= 0 or group_index < args.groups:
            sequence = args.first_group + group_index
            group = track.create_group(sequence) if args.first_group else track.append_group()
            sequence = group.sequence
            for frame in range(frames_per_group):
                timestamp = (
                    (time.monotonic_ns() - started_ns) // 1000
                    if args.wallclock_timestamps
                    else timestamp_for(sequence, frame, frames_per_group)
                )
                group.write_frame(payload_for(sequence, frame, args.payload_size), timestamp)
                if frame + 1 < frames_per_group:
                    await sleep_ms(args.frame_interval_ms)
            if sequence in args.abort_group:
                group.abort(args.group_abort_code)  # RESET of the group stream, app code
                emit("group_aborted", group=sequence, frames=frames_per_group, code=args.group_abort_code)
            else:
                group.finish()
                emit("group", group=sequence, frames=frames_per_group)
            group_index += 1
            await sleep_ms(args.interval_ms)
        if args.abort_code is not None:
            track.abort(args.abort_code)
            emit("aborted", groups=group_index, code=args.abort_code)
        else:
            track.finish()
            emit("finished", groups=group_index)
        await linger_and_close(broadcast, args)
    emit("done")


async def linger_and_close(broadcast, args) -> None:
    """Keeps a finished broadcast up for `--linger-ms` (so subscribers drain it), then closes it."""
    await sleep_ms(args.linger_ms)
    broadcast.close()


# MARK: - subscribe (raw track)


async def subscribed_track(client, args):
    """The track `--track` of `--broadcast`, subscribed with the range options, once announced."""
    consumer = await wait_broadcast(client, args.broadcast)
    track = await consumer.subscribe_track(args.track, subscription(args))
    emit("subscribed", broadcast=args.broadcast, track=args.track)
    return track


async def cmd_subscribe(args) -> None:
    async with make_client(args) as client:
        track = await subscribed_track(client, args)
        phase(f"receiving track {args.track!r} (frames so far: see the frame events)")
        count = 0
        received_groups: list[int] = []
        group_errors = 0
        group_error_kinds: dict[str, int] = {}

        async def read_group(group: moq.GroupConsumer) -> bool:
            """Print the group's frames; True once --count frames were printed."""
            nonlocal count, group_errors
            index = 0
            try:
                async for frame in group:
                    if args.summary:
                        if index == 0:
                            received_groups.append(group.sequence)
                    else:
                        frame_event("frame", group.sequence, index, frame.timestamp_us, frame.payload)
                    index += 1
                    count += 1
                    if args.count and count >= args.count:
                        return True
            except moq.Error as exc:
                # A reset group stream (e.g. GroupProducer.abort(n): APP code 64+n) ends
                # that group only; the subscription carries on.
                group_errors += 1
                fields = error_fields(exc)
                kind = f"{fields.get('kind', 'error')} {fields.get('code', fields['message'])}"
                group_error_kinds[kind] = group_error_kinds.get(kind, 0) + 1
                if not args.summary:
                    emit("group_error", group=group.sequence, frames=index, **error_fields(exc))
            return False

        if args.order == "sequence":
            # One group at a time, in sequence order (moq-ffi's next_group).
            while True:
                group = await track.next_group()
                if group is None:
                    break
                if await read_group(group):
                    return
        else:
            # Arrival order, each group read concurrently as soon as its stream opens.
            done = asyncio.Event()
            pending: set[asyncio.Task] = set()

            async def reader(group):
                if await read_group(group):
                    done.set()

            async def accept_groups():
                while True:
                    group = await track.recv_group()
                    if group is None:
                        break
                    task = asyncio.create_task(reader(group))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
                await asyncio.gather(*list(pending))

            acceptor = asyncio.create_task(accept_groups())
            finished = asyncio.create_task(done.wait())
            await asyncio.wait({acceptor, finished}, return_when=asyncio.FIRST_COMPLETED)
            if done.is_set():
                acceptor.cancel()
                return
            finished.cancel()
            acceptor.result()
        if args.summary:
            emit(
                "summary",
                frames=count,
                groups=received_groups,
                group_errors=group_errors,
                group_error_kinds=group_error_kinds,
            )
        emit("end", frames=count)
        if args.count and count < args.count:
            raise PeerError(f"track ended after {count} of {args.count} frames")


# MARK: - announced


async def cmd_announced(args) -> None:
    async with make_client(args) as client:
        phase(f"watching announcements under {args.prefix!r}")
        announcements = client.announced(args.prefix)
        emit("watching", prefix=args.prefix)
        count = 0
        async for update in announcements:
            route = update.route
            emit(
                "announce",
                path=update.prefix,
                active=update.active,
                hops=list(route.hops),
                cost=route.cost,
            )
            count += 1
            if args.count and count >= args.count:
                return


# MARK: - fetch


async def cmd_fetch(args) -> None:
    async with make_client(args) as client:
        consumer = await wait_broadcast(client, args.broadcast)
        phase(f"fetching group {args.group} of track {args.track!r}")
        group = await consumer.fetch_group(args.track, args.group, moq.FetchGroupOptions(priority=args.priority))
        index = 0
        async for frame in group:
            frame_event("frame", group.sequence, index, frame.timestamp_us, frame.payload)
            index += 1
        emit("end", frames=index)


# MARK: - datagrams


async def cmd_publish_datagrams(args) -> None:
    broadcast_name = args.broadcast or unique_name("broadcast")
    async with make_client(args) as client:
        broadcast, track = await announce_track(client, broadcast_name, args)
        for index in range(args.count):
            payload = payload_for(index, 0, args.payload_size)
            sequence = track.append_datagram(payload, timestamp_for(index, 0, 1))
            emit("datagram", sequence=sequence, index=index, size=len(payload))
            await sleep_ms(args.interval_ms)
        track.finish()
        emit("finished", datagrams=args.count)
        await linger_and_close(broadcast, args)
    emit("done")


async def cmd_subscribe_datagrams(args) -> None:
    async with make_client(args) as client:
        track = await subscribed_track(client, args)
        count = 0
        while True:
            datagram = await track.recv_datagram()
            if datagram is None:
                break
            emit(
                "datagram",
                sequence=datagram.sequence,
                timestamp_us=datagram.timestamp_us,
                size=len(datagram.payload),
                payload=base64.b64encode(datagram.payload).decode(),
            )
            count += 1
            if args.count and count >= args.count:
                return
        emit("end", datagrams=count)
        if args.count and count < args.count:
            raise PeerError(f"track ended after {count} of {args.count} datagrams")


# MARK: - media


VIDEO_WIDTH, VIDEO_HEIGHT, VIDEO_FPS = 320, 240, 30
AUDIO_RATE, AUDIO_CHANNELS, AUDIO_FRAME_US = 48000, 2, 20000
# The OpusHead libopus produces for 48 kHz stereo: version 1, 2 channels, pre-skip 312,
# 48000 Hz, gain 0, mapping family 0 (moq-lite-06.md §6.3 shows the same bytes).
OPUS_HEAD = b"OpusHead" + struct.pack("<BBHIhB", 1, AUDIO_CHANNELS, 312, AUDIO_RATE, 0, 0)


class TestPattern:
    """A moving bar over a colour that cycles: cheap I420 frames that change every picture."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height

    def frame(self, n: int) -> bytes:
        w, h = self.width, self.height
        bar = (n * 4) % w
        row = bytearray(b"\x40" * w)
        row[bar : bar + 16] = b"\xeb" * min(16, w - bar)
        luma = bytes(row) * h
        chroma_size = (w // 2) * (h // 2)
        u = bytes([(n * 3) % 256]) * chroma_size
        v = bytes([(255 - n * 5) % 256]) * chroma_size
        return luma + u + v


class Tone:
    """A 440 Hz stereo sine, S16 interleaved, served in 20 ms chunks."""

    def __init__(self) -> None:
        samples = []
        for i in range(AUDIO_RATE):  # 440 whole periods per second: loops seamlessly
            value = int(8000 * math.sin(2 * math.pi * 440 * i / AUDIO_RATE))
            samples.extend((value, value))
        self.second = struct.pack(f"<{len(samples)}h", *samples)
        self.chunk_bytes = AUDIO_RATE * AUDIO_FRAME_US // 1_000_000 * AUDIO_CHANNELS * 2

    def chunk(self, n: int) -> bytes:
        per_second = len(self.second) // self.chunk_bytes
        start = (n % per_second) * self.chunk_bytes
        return self.second[start : start + self.chunk_bytes]


def start_encoders(broadcast: moq.BroadcastProducer, args):
    video = broadcast.encode_video(
        moq.VideoEncoderInput(
            format=moq.VideoPixelFormat.I420, width=VIDEO_WIDTH, height=VIDEO_HEIGHT, framerate=VIDEO_FPS
        ),
        moq.VideoEncoderOutput(
            codec=moq.VideoCodec.H264, gop=args.gop, bitrate=args.bitrate, kind=moq.VideoEncoderKind.SOFTWARE()
        ),
    )
    audio = broadcast.encode_audio(
        "audio",
        moq.AudioEncoderInput(format=moq.AudioSampleFormat.S16, sample_rate=AUDIO_RATE, channels=AUDIO_CHANNELS),
        moq.AudioEncoderOutput(codec=moq.AudioCodec.opus()),
    )
    return video, audio


async def feed_encoders(video, audio, seconds: float, on_tick=None) -> tuple[int, int]:
    """Write the test pattern and the tone in real time for ``seconds``; returns the frame counts."""
    pattern, tone = TestPattern(VIDEO_WIDTH, VIDEO_HEIGHT), Tone()
    loop = asyncio.get_running_loop()
    start = loop.time()
    video_n = audio_n = 0
    video_step, audio_step = 1_000_000 // VIDEO_FPS, AUDIO_FRAME_US
    end_us = int(seconds * 1_000_000) if seconds > 0 else None
    while True:
        next_video, next_audio = video_n * video_step, audio_n * audio_step
        due = min(next_video, next_audio)
        if end_us is not None and due >= end_us:
            break
        delay = start + due / 1_000_000 - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        if next_video <= next_audio:
            video.write(moq.VideoFrame(timestamp_us=next_video, data=pattern.frame(video_n)))
            video_n += 1
        else:
            audio.write(moq.AudioFrame(timestamp_us=next_audio, data=tone.chunk(audio_n)))
            audio_n += 1
        if on_tick is not None:
            on_tick(video_n, audio_n)
    return video_n, audio_n


async def cmd_publish_media(args) -> None:
    broadcast_name = args.broadcast or unique_name("media")
    async with make_client(args) as client:
        broadcast = client.create_broadcast(broadcast_name)
        video, audio = start_encoders(broadcast, args)
        subscribed = expect_subscribe(broadcast_name, video.name)
        broadcast.announce()
        emit("announced", broadcast=broadcast_name, video_track=video.name, audio_track=audio.name)
        if args.wait_subscriber:
            await wait_subscriber(video.demand(), subscribed)
        video_frames, audio_frames = await feed_encoders(video, audio, args.seconds)
        video.finish()
        audio.finish()
        emit("finished", video_frames=video_frames, audio_frames=audio_frames)
        await linger_and_close(broadcast, args)
    emit("done")


def annexb_nals(data: bytes) -> list[bytes]:
    """Split an Annex-B access unit into NAL units (start codes removed)."""
    nals, i, n = [], 0, len(data)
    starts = []
    while i < n - 2:
        if data[i] == 0 and data[i + 1] == 0 and data[i + 2] == 1:
            starts.append((i, i + 3))
            i += 3
        else:
            i += 1
    for k, (begin, payload_start) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else n
        # A 4-byte start code leaves a zero byte before the next 3-byte one.
        while end > payload_start and data[end - 1] == 0 and k + 1 < len(starts):
            end -= 1
        nals.append(data[payload_start:end])
    return nals


def avcc_record(sps: bytes, pps: bytes) -> bytes:
    """An AVCDecoderConfigurationRecord (ISO 14496-15) holding one SPS and one PPS."""
    return (
        bytes([1, sps[1], sps[2], sps[3], 0xFF, 0xE1])
        + struct.pack(">H", len(sps))
        + sps
        + b"\x01"
        + struct.pack(">H", len(pps))
        + pps
    )


async def cmd_publish_media_avc1(args) -> None:
    """avc1 + Opus through publish_video/publish_audio (the bring-your-own-encoder path).

    moq-ffi offers no way to get encoded bytes out of its encoders directly, so the
    in-process encoders write into a private, never-announced broadcast; this reads that
    broadcast back, rewrites each H.264 access unit from Annex-B to AVCC (4-byte lengths,
    SPS/PPS moved into the avcC record) and republishes video and the Opus packets on the
    network broadcast.
    """
    broadcast_name = args.broadcast or unique_name("media-avc1")
    local = moq.BroadcastProducer()
    video_enc, audio_enc = start_encoders(local, args)
    local_consumer = local.consume()
    video_in = await local_consumer.subscribe_media(
        video_enc.name, moq.Container.LEGACY(), moq.Subscription(max_age_us=60_000_000)
    )
    audio_in = await local_consumer.subscribe_media(
        audio_enc.name, moq.Container.LEGACY(), moq.Subscription(max_age_us=60_000_000)
    )
    async with make_client(args) as client:
        broadcast = client.create_broadcast(broadcast_name)
        audio_out = broadcast.publish_audio(moq.AudioFormat.OPUS, OPUS_HEAD, track=args.audio_track)
        counts = {"video": 0, "audio": 0}
        announced = asyncio.Event()
        video_ready = asyncio.Event()

        async def pump_video():
            video_out = None
            async for frame in video_in:
                nals = [nal for nal in annexb_nals(frame.payload) if nal]
                if video_out is None:
                    sps = next((n for n in nals if n[0] & 0x1F == 7), None)
                    pps = next((n for n in nals if n[0] & 0x1F == 8), None)
                    if sps is None or pps is None:
                        continue  # wait for the first keyframe with parameter sets
                    video_out = broadcast.publish_video(
                        moq.VideoFormat.AVC1, avcc_record(sps, pps), track=args.video_track
                    )
                    video_ready.set()
                    await announced.wait()
                au = b"".join(
                    struct.pack(">I", len(n)) + n for n in nals if n[0] & 0x1F not in (7, 8, 9)
                )
                if au:
                    video_out.write_frame(au, frame.timestamp_us)
                    counts["video"] += 1
            if video_out is not None:
                video_out.finish()

        async def pump_audio():
            await announced.wait()
            async for frame in audio_in:
                if frame.payload:
                    audio_out.write_frame(frame.payload, frame.timestamp_us)
                    audio_out.cut()  # one Opus packet per group, as hang's importer does
                    counts["audio"] += 1
            audio_out.finish()

        pumps = [asyncio.create_task(pump_video()), asyncio.create_task(pump_audio())]
        feeder = asyncio.create_task(feed_encoders(video_enc, audio_enc, args.seconds))
        # Announce once the catalog can describe the video (the avcC needs the first keyframe).
        await video_ready.wait()
        broadcast.announce()
        announced.set()
        emit("announced", broadcast=broadcast_name, video_track=args.video_track, audio_track=args.audio_track)
        await feeder
        video_enc.finish()
        audio_enc.finish()
        local.close()
        await asyncio.gather(*pumps)
        emit("finished", video_frames=counts["video"], audio_frames=counts["audio"])
        await linger_and_close(broadcast, args)
    emit("done")


def mp4_boxes(data: bytes) -> list[bytes]:
    """The top-level boxes of an MP4 file, each as its bytes (size 1 = 64-bit size)."""
    boxes, at = [], 0
    while at + 8 <= len(data):
        size = struct.unpack_from(">I", data, at)[0]
        if size == 1:
            size = struct.unpack_from(">Q", data, at + 8)[0]
        elif size == 0:
            size = len(data) - at
        if size < 8 or at + size > len(data):
            raise PeerError(f"malformed MP4: a box of {size} bytes at {at}")
        boxes.append(data[at : at + size])
        at += size
    return boxes


async def cmd_publish_fmp4(args) -> None:
    """A fragmented MP4 file through moq-ffi's own fMP4 importer (publish_container FMP4).

    The init segment (everything before the first moof) goes first, then each moof+mdat pair,
    one every --interval-ms, like a live muxer's output.
    """
    broadcast_name = args.broadcast or unique_name("fmp4")
    boxes = mp4_boxes(open(args.file, "rb").read())
    first = next((i for i, b in enumerate(boxes) if b[4:8] == b"moof"), len(boxes))
    head, rest = b"".join(boxes[:first]), boxes[first:]
    async with make_client(args) as client:
        broadcast = client.create_broadcast(broadcast_name)
        container = broadcast.publish_container(moq.ContainerFormat.FMP4)
        container.write(head)
        broadcast.announce()
        emit("announced", broadcast=broadcast_name)
        fragments = 0
        chunk = b""
        for box in rest:
            chunk += box
            if box[4:8] == b"mdat":
                container.write(chunk)
                chunk = b""
                fragments += 1
                await sleep_ms(args.interval_ms)
        container.finish()
        emit("finished", fragments=fragments)
        await linger_and_close(broadcast, args)
    emit("done")


async def raw_catalog(consumer: moq.BroadcastConsumer) -> dict:
    """The newest catalog.json snapshot, exactly as published (one full JSON per group)."""
    phase("waiting for a catalog.json snapshot (is this a hang broadcast?)")
    track = await consumer.subscribe_track("catalog.json")
    try:
        frame = await track.read_frame()
    finally:
        track.cancel()
    if frame is None:
        raise PeerError("catalog.json ended without a snapshot")
    return json.loads(frame.payload)


async def cmd_catalog(args) -> None:
    async with make_client(args) as client:
        consumer = await wait_broadcast(client, args.broadcast)
        emit("catalog", broadcast=args.broadcast, json=await raw_catalog(consumer))


async def cmd_watch(args) -> None:
    started = asyncio.get_running_loop().time()  # connect → first decoded frame (make bench's ttff case)
    async with make_client(args) as client:
        consumer = await wait_broadcast(client, args.broadcast)
        phase("waiting for the catalog (is this a hang broadcast?)")
        catalogs = await consumer.subscribe_catalog()
        loop = asyncio.get_running_loop()
        # A catalog may list video before audio (or the reverse); give it a moment to fill.
        deadline = loop.time() + args.catalog_wait_ms / 1000
        catalog = await anext(catalogs)
        while not (catalog.video and catalog.audio) and loop.time() < deadline:
            try:
                catalog = await asyncio.wait_for(anext(catalogs), deadline - loop.time())
            except asyncio.TimeoutError:
                break
        catalogs.cancel()
        emit("catalog", broadcast=args.broadcast, json=await raw_catalog(consumer))
        if not catalog.video and not catalog.audio:
            raise PeerError("catalog lists no video and no audio rendition")

        counts = {"video": 0, "audio": 0, "errors": 0}
        enough = asyncio.Event()
        max_age_us = args.max_latency_ms * 1000

        async def read_video(name, entry):
            try:
                frames = await consumer.decode_video(name, entry, moq.VideoDecoderOutput(max_age_us=max_age_us))
                async for frame in frames:
                    counts["video"] += 1
                    if counts["video"] == 1:
                        emit("first_frame", ms=round((asyncio.get_running_loop().time() - started) * 1000, 2))
                    emit("video", track=name, pts_us=frame.timestamp_us, width=frame.width, height=frame.height,
                         at_ns=time.monotonic_ns())
                    if args.frames and counts["video"] >= args.frames:
                        enough.set()
            except Exception as exc:
                counts["errors"] += 1
                emit("decode_error", track=name, kind="video", message=describe(exc))

        async def read_audio(name, entry):
            try:
                output = moq.AudioDecoderOutput(format=moq.AudioSampleFormat.F32, max_age_us=max_age_us)
                frames = await consumer.decode_audio(name, entry, output)
                async for frame in frames:
                    counts["audio"] += 1
                    emit("audio", track=name, pts_us=frame.timestamp_us, bytes=len(frame.data),
                         at_ns=time.monotonic_ns())
            except Exception as exc:
                counts["errors"] += 1
                emit("decode_error", track=name, kind="audio", message=describe(exc))

        videos = {n: e for n, e in catalog.video.items() if args.video_track is None or n == args.video_track}
        if not videos and args.video_track is not None:
            raise PeerError(f"no video rendition {args.video_track!r} in the catalog: {', '.join(catalog.video)}")
        readers = [asyncio.create_task(read_video(n, e)) for n, e in videos.items()]
        if not args.no_audio:
            readers += [asyncio.create_task(read_audio(n, e)) for n, e in catalog.audio.items()]
        all_done = asyncio.create_task(asyncio.wait(readers))
        stoppers = {all_done, asyncio.create_task(enough.wait())}
        if args.seconds > 0:
            stoppers.add(asyncio.create_task(asyncio.sleep(args.seconds)))
        _, still = await asyncio.wait(stoppers, return_when=asyncio.FIRST_COMPLETED)
        for task in list(still) + readers:
            task.cancel()
        emit(
            "summary",
            video_frames=counts["video"],
            audio_frames=counts["audio"],
            errors=counts["errors"],
        )
        if args.frames and counts["video"] < args.frames:
            raise PeerError(f"decoded {counts['video']} of {args.frames} video frames")


# MARK: - bench (make bench: the Rust side of scripts/bench.py, mirroring moqbench's roles)

# A bench frame: seq (u64 LE) and the publisher's CLOCK_MONOTONIC ns (u64 LE) when written, then
# filler; the same layout as Sources/moqbench/StampedPayload.swift.
BENCH_HEADER = struct.Struct("<QQ")


class AckReader:
    """The publisher's end of the throughput feedback FIFO (cumulative u64 LE frame counts).

    Opened read-write and non-blocking (on Linux that never blocks and never reads EOF), watched
    by the event loop; ``wait_for`` returns once the subscriber has acknowledged enough frames.
    """

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        self.acknowledged = 0
        self._pending = b""
        self._changed = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.fd, self._drain)

    def _drain(self) -> None:
        try:
            while True:
                data = os.read(self.fd, 4096)
                if not data:
                    break
                self._pending += data
        except BlockingIOError:
            pass
        whole = len(self._pending) // 8 * 8
        if whole:
            (value,) = struct.unpack_from("<Q", self._pending, whole - 8)
            self.acknowledged = max(self.acknowledged, value)
            self._pending = self._pending[whole:]
            self._changed.set()

    async def wait_for(self, count: int, timeout_s: float) -> bool:
        """True once ``count`` frames are acknowledged; False after ``timeout_s`` without progress."""
        while self.acknowledged < count:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout_s)
            except asyncio.TimeoutError:
                return False
        return True

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self.fd)
        os.close(self.fd)


async def cmd_bench_publish(args) -> None:
    """Stamped frames, paced by --fps, or (--fps 0) as fast as the subscriber's acks allow, or
    (--fps 0 --window 0) open loop: as fast as this process writes, whatever the subscribers take."""
    async with make_client(args) as client:
        broadcast = client.create_broadcast(args.broadcast)
        track = broadcast.publish_track(args.track, moq.TrackInfo(priority=127, max_age_us=args.max_age_ms * 1000))
        broadcast.announce()
        emit("announced", broadcast=args.broadcast, track=args.track)
        acks = AckReader(args.ack_fifo) if args.ack_fifo else None
        open_loop = args.fps <= 0 and args.window <= 0
        if args.fps <= 0 and acks is None and not open_loop:
            raise PeerError("--fps 0 needs --ack-fifo (or --window 0 for an open-loop publisher)")
        if open_loop and args.frames < 0:
            raise PeerError("an open-loop publisher (--fps 0 --window 0) needs --frames")
        if args.go_file:
            while not os.path.exists(args.go_file):
                await asyncio.sleep(0.005)
        emit("started", ns=time.monotonic_ns())
        frame = bytearray(b"\x5a" * max(args.frame_size, BENCH_HEADER.size))
        interval_ns = int(1e9 / args.fps) if args.fps > 0 else 0
        total = args.frames if args.frames >= 0 else (int(args.seconds * args.fps) if interval_ns else None)
        start = time.monotonic_ns()
        end = start + int(args.seconds * 1e9)
        group = None
        seq = sent_bytes = first_ns = last_ns = 0
        stalled = False
        while seq < total if total is not None else time.monotonic_ns() < end:
            if open_loop and seq % 50 == 0:
                await asyncio.sleep(0)  # writes are synchronous: let the event loop breathe now and then
            if acks is not None and 0 < args.window <= seq and not await acks.wait_for(seq - args.window + 1, 10):
                stalled = True
                break
            if interval_ns:
                delay = start + seq * interval_ns - time.monotonic_ns()
                if delay > 0:
                    await asyncio.sleep(delay / 1e9)
            if seq % args.frames_per_group == 0:
                if group is not None:
                    group.finish()
                group = track.append_group()
            now = time.monotonic_ns()
            BENCH_HEADER.pack_into(frame, 0, seq, now)
            media_us = seq * interval_ns // 1000 if interval_ns else (now - start) // 1000
            group.write_frame(bytes(frame), media_us)
            if seq == 0:
                first_ns = now
            last_ns = now
            sent_bytes += len(frame)
            seq += 1
        if group is not None:
            group.finish()
        track.finish()
        emit(
            "result",
            sent=seq,
            bytes=sent_bytes,
            first_ns=first_ns,
            last_ns=last_ns,
            stalled=stalled,
            cpu_s=time.process_time(),
        )
        await asyncio.sleep(args.linger_s)  # moq-ffi has no drain: give the last groups time to leave
        if acks is not None:
            acks.close()
        broadcast.close()
    emit("done")


def resident_kib() -> int:
    """This process's resident set size (VmRSS) in KiB, or -1."""
    with contextlib.suppress(OSError):
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    return -1


class BenchRecorder:
    """Counts frames and measures publish-to-receive latency (same fields as moqbench's FrameRecorder)."""

    def __init__(self, warmup_frames: int) -> None:
        self.warmup_frames = warmup_frames
        self.frames = self.bytes = self.groups = self.out_of_order = self.group_errors = 0
        self.highest_seq = -1
        self.first_ns = self.last_ns = 0
        self.latencies_us: list[int] = []

    def record(self, payload: bytes, now: int) -> None:
        self.frames += 1
        self.bytes += len(payload)
        if not self.first_ns:
            self.first_ns = now
        self.last_ns = now
        if len(payload) < BENCH_HEADER.size:
            return
        seq, stamp = BENCH_HEADER.unpack_from(payload)
        if seq < self.highest_seq:
            self.out_of_order += 1
        self.highest_seq = max(self.highest_seq, seq)
        if seq >= self.warmup_frames:
            self.latencies_us.append(max(0, now - stamp) // 1000)

    def fields(self) -> dict:
        return {
            "frames": self.frames,
            "bytes": self.bytes,
            "groups": self.groups,
            "highest_seq": self.highest_seq,
            "out_of_order": self.out_of_order,
            "group_errors": self.group_errors,
            "first_ns": self.first_ns,
            "last_ns": self.last_ns,
            "latencies_us": self.latencies_us,
            "cpu_s": time.process_time(),
        }


async def cmd_bench_subscribe(args) -> None:
    """One subscription read in sequence order (next_group), every frame counted and timed."""
    async with make_client(args) as client:
        consumer = await wait_broadcast(client, args.broadcast)
        subscription = moq.Subscription(priority=128, max_age_us=args.max_latency_ms * 1000)
        track = await consumer.subscribe_track(args.track, subscription)
        emit("subscribed", broadcast=args.broadcast, track=args.track)
        ack_fd = os.open(args.ack_fifo, os.O_WRONLY | os.O_NONBLOCK) if args.ack_fifo else None
        recorder = BenchRecorder(args.warmup_frames)
        phase(f"receiving track {args.track!r}")

        async def read() -> str:
            while True:
                group = await track.next_group()
                if group is None:
                    return "track ended"
                recorder.groups += 1
                while True:
                    try:
                        frame = await group.read_frame()
                    except moq.Error:  # that group was reset (dropped by a relay): the track goes on
                        recorder.group_errors += 1
                        break
                    if frame is None:
                        break
                    recorder.record(frame.payload, time.monotonic_ns())
                    if ack_fd is not None:
                        with contextlib.suppress(OSError):  # a full FIFO or a publisher gone
                            os.write(ack_fd, struct.pack("<Q", recorder.frames))
                    if recorder.frames == 1:
                        emit("first_frame", ns=recorder.first_ns)
                    if args.progress_every and recorder.frames % args.progress_every == 0:
                        emit("progress", frames=recorder.frames, groups=recorder.groups, rss_kib=resident_kib())
                    if args.frames and recorder.frames >= args.frames:
                        return "frame limit"

        try:
            ended = await asyncio.wait_for(read(), args.deadline_s)
        except asyncio.TimeoutError:
            ended = "deadline"
        except moq.Error as exc:
            ended = describe(exc)
        track.cancel()
        if ack_fd is not None:
            os.close(ack_fd)
        emit("result", **recorder.fields(), end=ended, groups_skipped=-1)


# MARK: - Command line


class Parser(argparse.ArgumentParser):
    def error(self, message):  # bad arguments are reported as events too
        self.print_usage(sys.stderr)
        emit("error", message=f"usage: {message}")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    root = Parser(prog="moqpeer", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root.add_argument("--debug", action="store_true", help="Rust log level debug (every message, on stderr)")
    root.add_argument("--log-level", default="warn", help="Rust log level when --debug is absent")
    sub = root.add_subparsers(dest="command", required=True, parser_class=Parser)

    def client(name, help_text, timeout_s=30.0):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--url", required=True, help="moql://127.0.0.1:PORT/path")
        pin = p.add_mutually_exclusive_group()
        pin.add_argument("--fingerprint", help="pin the server certificate (SHA-256 hex of the DER)")
        pin.add_argument("--insecure", action="store_true", help="skip certificate verification")
        p.add_argument(
            "--timeout-s", type=float, default=timeout_s, help=f"fail after this long (0 = never; default {timeout_s:g})"
        )
        p.add_argument(
            "--websocket-delay-ms", type=float, help="enable the WebSocket fallback, raced this long after QUIC"
        )
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)
        return p

    def publisher_options(p):
        p.add_argument("--broadcast", help="broadcast path (default: a unique name)")
        p.add_argument("--track", default="data")
        p.add_argument("--wait-subscriber", action="store_true", help="write nothing until a subscriber exists")
        p.add_argument("--linger-ms", type=float, default=1000, help="stay connected after finishing")
        p.add_argument("--payload-size", type=int, help="pad/cut each payload to this many bytes")
        p.add_argument("--interval-ms", type=float, default=10)
        p.add_argument("--track-priority", type=int, help="publisher priority (TRACK_INFO)")
        p.add_argument("--max-age-ms", type=int, help="publisher cache max age (TRACK_INFO)")

    def subscriber_options(p):
        p.add_argument("--broadcast", required=True)
        p.add_argument("--track", default="data")
        p.add_argument("--max-latency-ms", type=int, default=10000, help="latency budget (0 = newest group only)")
        p.add_argument("--priority", type=int, default=0)

    p = sub.add_parser("relay", help="moq.Server relaying through one shared origin")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--reject-path", help="refuse sessions whose path starts with this (after trimming '/')")
    p.add_argument("--reject-code", type=int, default=401, help="code for --reject-path (401/403 = unauthorized)")
    p.add_argument(
        "--connect", action="append", default=[], help="also dial this relay as a cluster link (repeatable)"
    )
    p.add_argument("--connect-fingerprint", help="pin the certificate of the relays dialled with --connect")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)

    p = sub.add_parser("udp-blackhole", help="a port that drops UDP and forwards TCP to --target")
    p.add_argument("--target", type=int, required=True, help="the TCP port forwarded to (127.0.0.1)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)

    p = sub.add_parser("https-get", help="one HTTPS GET (Python's TLS), the certificate pinned")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--path", default="/health")
    p.add_argument("--fingerprint", required=True, help="the server certificate's SHA-256 (hex)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS)

    p = client("connect", "connect, complete SETUP, close")
    p.add_argument("--hold-ms", type=float, default=0, help="stay connected this long before closing")
    p.add_argument("--setup-timeout-s", type=float, default=5, help="wait this long for the server's SETUP")

    # Publishers run until their work is done or they are stopped: no timeout by default.
    p = client("publish", "publish a raw track with deterministic payloads", timeout_s=0)
    publisher_options(p)
    p.add_argument("--groups", type=int, default=5, help="groups to write (<= 0: until stopped)")
    p.add_argument("--go-file", help="write nothing until this file exists (after --wait-subscriber)")
    p.add_argument("--frames-per-group", type=int, default=3)
    p.add_argument("--frame-interval-ms", type=float, default=0, help="pause between frames of a group")
    p.add_argument("--first-group", type=int, default=0, help="sequence of the first group")
    p.add_argument(
        "--abort-group", type=int, action="append", default=[], help="abort this group after its frames (repeatable)"
    )
    p.add_argument("--group-abort-code", type=int, default=1, help="application code for --abort-group")
    p.add_argument("--abort-code", type=int, help="abort the track with this application code instead of finishing")
    p.add_argument(
        "--wallclock-timestamps",
        action="store_true",
        help="timestamp frames with the time since the first one (µs) instead of 30 fps media time",
    )

    p = client("subscribe", "subscribe to a raw track and print its frames")
    subscriber_options(p)
    p.add_argument("--count", type=int, default=0, help="exit after this many frames")
    p.add_argument("--group-start", type=int)
    p.add_argument("--group-end", type=int)
    p.add_argument("--order", choices=["sequence", "arrival"], default="sequence")
    p.add_argument(
        "--summary",
        action="store_true",
        help="no frame events: one summary event at the end (groups in order received, group errors)",
    )

    p = client("announced", "print announcements under a prefix")
    p.add_argument("--prefix", default="")
    p.add_argument("--count", type=int, default=0, help="exit after this many updates")

    p = client("fetch", "FETCH one group and print its frames")
    p.add_argument("--broadcast", required=True)
    p.add_argument("--track", default="data")
    p.add_argument("--group", type=int, required=True)
    p.add_argument("--priority", type=int, default=0)

    p = client("publish-datagrams", "publish a track of datagrams", timeout_s=0)
    publisher_options(p)
    p.add_argument("--count", type=int, default=5, help="datagrams to send")

    p = client("subscribe-datagrams", "print the datagrams of a track")
    subscriber_options(p)
    p.add_argument("--count", type=int, default=0, help="exit after this many datagrams")

    for name, text in (
        ("publish-media", "H.264 (avc3) + Opus from the in-process encoders"),
        ("publish-media-avc1", "H.264 avc1 + Opus via publish_video/publish_audio"),
    ):
        p = client(name, text, timeout_s=0)
        p.add_argument("--broadcast", help="broadcast path (default: a unique name)")
        p.add_argument("--seconds", type=float, default=3, help="media duration (<= 0: until stopped)")
        p.add_argument("--gop", type=int, default=30, help="keyframe interval in frames (one group per GOP)")
        p.add_argument("--bitrate", type=int, default=300_000)
        p.add_argument("--linger-ms", type=float, default=1000)
        if name == "publish-media":
            p.add_argument("--wait-subscriber", action="store_true", help="encode nothing until video is subscribed")
        else:
            p.add_argument("--video-track", default="0.avc1")
            p.add_argument("--audio-track", default="1.opus")

    p = client("publish-fmp4", "a fragmented MP4 file through moq-ffi's fMP4 importer (CMAF tracks)", timeout_s=0)
    p.add_argument("--broadcast", help="broadcast path (default: a unique name)")
    p.add_argument("--file", required=True, help="fragmented MP4 (ftyp, moov, then moof+mdat pairs)")
    p.add_argument("--interval-ms", type=float, default=33, help="pause after each moof+mdat pair")
    p.add_argument("--linger-ms", type=float, default=1000)

    p = client("watch", "decode a hang broadcast (catalog, video, audio)")
    p.add_argument("--broadcast", required=True)
    p.add_argument("--seconds", type=float, default=5, help="stop after this long (<= 0: at the end)")
    p.add_argument("--frames", type=int, default=0, help="stop after this many video frames")
    p.add_argument("--max-latency-ms", type=int, default=10000)
    p.add_argument("--catalog-wait-ms", type=float, default=2000, help="wait this long for video and audio")
    p.add_argument("--video-track", help="decode only this video rendition (a fixed rung of a ladder)")
    p.add_argument("--no-audio", action="store_true", help="decode no audio")

    p = client("catalog", "print a broadcast's catalog.json once")
    p.add_argument("--broadcast", required=True)

    p = client("bench-publish", "bench: stamped frames, paced or ack-windowed (make bench)", timeout_s=0)
    p.add_argument("--broadcast", required=True)
    p.add_argument("--track", default="bench")
    p.add_argument("--frame-size", type=int, default=1000, help="payload bytes (at least 16)")
    p.add_argument("--fps", type=float, default=100, help="frames per second; 0 = as fast as acks allow")
    p.add_argument("--frames-per-group", type=int, default=1)
    p.add_argument("--seconds", type=float, default=10, help="how long to write")
    p.add_argument("--frames", type=int, default=-1, help="write exactly this many frames instead")
    p.add_argument("--go-file", help="write nothing until this file exists")
    p.add_argument("--ack-fifo", help="read the subscriber's cumulative frame count (u64 LE) here")
    p.add_argument("--window", type=int, default=32, help="frames written but not acknowledged, at most (0: none)")
    p.add_argument("--max-age-ms", type=int, default=10000, help="the track's max age (how long caches keep groups)")
    p.add_argument("--linger-s", type=float, default=2, help="stay connected after the last frame")

    p = client("bench-subscribe", "bench: count and time every frame of a track (make bench)", timeout_s=0)
    p.add_argument("--broadcast", required=True)
    p.add_argument("--track", default="bench")
    p.add_argument("--max-latency-ms", type=int, default=10000)
    p.add_argument("--frames", type=int, default=0, help="stop after this many frames")
    p.add_argument("--warmup-frames", type=int, default=0, help="frames with seq < N are not timed")
    p.add_argument("--deadline-s", type=float, default=120, help="stop reading after this long")
    p.add_argument("--ack-fifo", help="write the cumulative frame count (u64 LE) here after each frame")
    p.add_argument("--progress-every", type=int, default=0, help="a progress event every N frames")
    return root


COMMANDS = {
    "relay": cmd_relay,
    "udp-blackhole": cmd_udp_blackhole,
    "https-get": cmd_https_get,
    "connect": cmd_connect,
    "publish": cmd_publish,
    "subscribe": cmd_subscribe,
    "announced": cmd_announced,
    "fetch": cmd_fetch,
    "publish-datagrams": cmd_publish_datagrams,
    "subscribe-datagrams": cmd_subscribe_datagrams,
    "publish-media": cmd_publish_media,
    "publish-media-avc1": cmd_publish_media_avc1,
    "publish-fmp4": cmd_publish_fmp4,
    "watch": cmd_watch,
    "catalog": cmd_catalog,
    "bench-publish": cmd_bench_publish,
    "bench-subscribe": cmd_bench_subscribe,
}


def watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Stop on EOF when stdin is a pipe or socket: the parent that held it has gone."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return

    def reader():
        with contextlib.suppress(Exception):
            while os.read(0, 4096):
                pass
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=reader, name="stdin-eof", daemon=True).start()


async def main_async(args) -> int:
    # A parent may start us with signals blocked (a mask inherited through exec); then
    # SIGTERM would stay pending forever and only SIGKILL could stop us.
    stop_signals = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, stop_signals) & stop_signals
    if blocked:
        log(f"unblocked {sorted(s.name for s in blocked)} inherited from the parent")
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    reason = {"value": "stdin closed"}

    def on_signal(name):
        reason["value"] = name
        stop.set()

    for sig in stop_signals:
        loop.add_signal_handler(sig, on_signal, sig.name)
    watch_stdin(loop, stop)

    command = asyncio.create_task(COMMANDS[args.command](args))
    stopper = asyncio.create_task(stop.wait())
    timeout = getattr(args, "timeout_s", 0) or None
    done, _ = await asyncio.wait({command, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    if command in done:
        stopper.cancel()
        command.result()  # raises the command's failure
        return 0
    command.cancel()
    with contextlib.suppress(BaseException):
        await command
    if stopper in done:
        emit("stopped", reason=reason["value"])
        return 0
    stopper.cancel()
    if args.command == "announced" and not args.count:
        emit("stopped", reason="timeout")  # no --count: watching until the timeout is the job
        return 0
    raise PeerError(f"timed out after {timeout:g} s ({PHASE})")


def configure_logging(args) -> None:
    """Set the Rust log level, and tap the log where the API hides what a command needs.

    ``connect`` reads the negotiated version and the server's SETUP from it; publishers
    with ``--wait-subscriber`` read the arrival of the SUBSCRIBE.
    """
    global LOG_TAP
    level = "debug" if args.debug else args.log_level
    extra = []
    if args.command == "connect":
        extra = ["moq_tokio::client=info", "moq_net::lite::subscriber=debug"]
    elif getattr(args, "wait_subscriber", False):
        extra = ["moq_net::lite::publisher=info"]
    if extra:
        # moq_log_level takes a bare level, but the Rust side honours RUST_LOG directives.
        if not args.debug:
            os.environ["RUST_LOG"] = ",".join([os.environ.get("RUST_LOG") or level] + extra)
        LOG_TAP = RustLogTap()
    moq.log_level(level)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        configure_logging(args)
        return asyncio.run(main_async(args))
    except PeerError as exc:
        emit("error", message=str(exc))
    except moq.Error as exc:
        emit("error", **error_fields(exc))
    except Exception as exc:
        log(f"unexpected failure: {exc!r}")
        emit("error", **error_fields(exc))
    return 1


if __name__ == "__main__":
    sys.exit(main())
