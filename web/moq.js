// SPDX-License-Identifier: MIT
// A moq-lite-06 subscriber session over WebTransport (docs: moq-lite-06.md §1.6, §4).
// Only what a viewer needs: SETUP, ANNOUNCE_REQUEST, TRACK, SUBSCRIBE and group streams.
// Streams this page does not expect are refused, never left hanging.

import {
  Cursor, StreamReader, WireError, Writer, describe, errorCode, safeNumber, streamError, unzigzag,
  varintBytes, withTimeout,
} from "./wire.js";

export const ALPN = "moq-lite-06";

// Stream types (§4.0).
const UNI_GROUP = 0x00, UNI_SETUP = 0x01;
const BIDI_ANNOUNCE = 0x01, BIDI_SUBSCRIBE = 0x02, BIDI_TRACK = 0x06;
// Stream error codes (§4.10); the browser maps them into the WebTransport range.
const CANCEL = 0x1, NOT_FOUND = 0x33;
/** Largest frame accepted (a keyframe of a high-bitrate stream fits easily). */
export const MAX_FRAME = 16 << 20;

/** Opens the WebTransport session, offering moq-lite-06 (retried without `protocols` if refused). */
export async function connectTransport(url, certificateHash, log = () => {}) {
  const base = certificateHash
    ? { serverCertificateHashes: [{ algorithm: "sha-256", value: certificateHash }] }
    : {};
  let transport = null;
  try {
    transport = new WebTransport(url, { ...base, protocols: [ALPN] });
    await transport.ready;
  } catch (e) {
    // An older browser may reject `protocols`, or a server may refuse the header: try plain.
    log(`WebTransport with protocols failed (${describe(e)}); retrying without`);
    try { transport?.close(); } catch {}
    try {
      transport = new WebTransport(url, base);
      await transport.ready;
    } catch (e2) {
      throw new Error(`WebTransport to ${url} failed: ${describe(e2)} (is the relay up, and the fingerprint right?)`);
    }
  }
  if (transport.protocol && transport.protocol !== ALPN) {
    transport.close({ closeCode: 0, reason: "unsupported protocol" });
    throw new Error(`server chose protocol ${transport.protocol}, not ${ALPN}`);
  }
  return transport;
}

/**
 * Writes `bytes` on a writable stream; `finish` also sends FIN. A finished stream's errors are ignored:
 * the Rust side answers a FINed SETUP or TRACK request with STOP_SENDING (raw code 0) as soon as it
 * has read it (§4.1), which may reject the write or close promise although everything arrived.
 */
async function send(writable, bytes, finish = false) {
  const w = writable.getWriter();
  if (!finish) {
    await w.write(bytes);
    w.releaseLock();
    return;
  }
  w.write(bytes).catch(() => {});
  await w.close().catch(() => {});
}

/** Resets a writable stream with a moq stream code (errors ignored: it may be closed already). */
function reset(writable, code) {
  try { writable.abort(streamError(code)).catch(() => {}); } catch {}
}

export class MoqSession {
  constructor(transport, log = () => {}) {
    this.transport = transport;
    this.log = log;
    this.subscriptions = new Map(); // subscribe id → Subscription
    this.nextSubscribeId = 0;
    // A random non-zero hop ID below 2^53 (SETUP Origin, §4.1).
    this.hop = 1 + Math.floor(Math.random() * (2 ** 52));
    this.closed = false;
    let resolveSetup;
    this.serverSetup = new Promise((r) => { resolveSetup = r; });
    this.resolveSetup = resolveSetup;
    this.done = transport.closed.then(
      (info) => `closed (${info?.closeCode ?? 0}${info?.reason ? ": " + info.reason : ""})`,
      (e) => `lost: ${describe(e)}`,
    ).finally(() => { this.closed = true; });
  }

  /** Sends the client SETUP and starts accepting the server's streams. */
  async start() {
    // SETUP: Role = 2 (subscriber), Origin = our hop. No Path on WebTransport (§1.6).
    const params = [[0x3, varintBytes(2)], [0x5, varintBytes(this.hop)]];
    const body = new Writer().varint(params.length);
    for (const [id, value] of params) body.varint(id).varint(value.length).push(value);
    const uni = await this.transport.createUnidirectionalStream();
    await send(uni, new Writer().varint(UNI_SETUP).message(body).bytes(), true);
    this.acceptUni().catch((e) => this.log(`uni streams: ${describe(e)}`));
    this.acceptBidi().catch((e) => this.log(`bidi streams: ${describe(e)}`));
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    try { this.transport.close({ closeCode: 0, reason: "" }); } catch {}
  }

  // MARK: Streams the server opens

  async acceptUni() {
    const reader = this.transport.incomingUnidirectionalStreams.getReader();
    let setupSeen = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const stream = new StreamReader(value);
      (async () => {
        const type = await withTimeout(stream.varint(true), 10000, "stream type");
        if (type === UNI_GROUP) return this.readGroup(stream);
        if (type === UNI_SETUP && !setupSeen) {
          setupSeen = true;
          const msg = await withTimeout(stream.message(4096), 10000, "server SETUP");
          if (!msg) throw new WireError("empty SETUP stream");
          const count = msg.varint();
          if (count > 64) throw new WireError("too many SETUP parameters");
          const params = {};
          for (let i = 0; i < count; i++) { const id = msg.varint(); params[id] = msg.bytesField(4096); }
          msg.end();
          this.resolveSetup(params);
          return; // the server FINs the stream; nothing else is read from it
        }
        stream.cancel(CANCEL); // unknown type (or a second SETUP): ignored
      })().catch((e) => { this.log(`uni stream: ${describe(e)}`); stream.cancel(CANCEL); });
    }
  }

  async acceptBidi() {
    const reader = this.transport.incomingBidirectionalStreams.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const stream = new StreamReader(value.readable);
      (async () => {
        const type = await withTimeout(stream.varint(true), 10000, "stream type");
        if (type === BIDI_ANNOUNCE) {
          // The server asks what we publish: nothing. ANNOUNCE_OK{hop, 0 active}, kept open (§9.2).
          await withTimeout(stream.message(4096), 10000, "ANNOUNCE_REQUEST");
          await send(value.writable, new Writer().message(new Writer().varint(this.hop).varint(0)).bytes());
          while (await stream.message(4096, true)) { /* nothing more is expected; drained */ }
          return;
        }
        reset(value.writable, type === BIDI_TRACK || type === BIDI_SUBSCRIBE ? NOT_FOUND : CANCEL);
        stream.cancel(CANCEL);
      })().catch(() => { reset(value.writable, CANCEL); stream.cancel(CANCEL); });
    }
  }

  // MARK: Announcements

  /**
   * Watches broadcasts under `prefix` (ANNOUNCE_REQUEST, §4.2). `onChange(path, active)` is called
   * for each START/END. Returns { close(), done } where `done` settles when the stream ends.
   */
  announced(prefix, onChange) {
    const run = async () => {
      const bidi = await this.transport.createBidirectionalStream();
      const stream = new StreamReader(bidi.readable);
      handle.stop = () => { reset(bidi.writable, CANCEL); stream.cancel(CANCEL); };
      if (handle.closed) { handle.stop(); return "closed"; }
      const request = new Writer().varint(BIDI_ANNOUNCE).message(new Writer().string(prefix));
      await send(bidi.writable, request.bytes());
      const ok = await withTimeout(stream.message(4096), 10000, "ANNOUNCE_OK");
      ok.varint("hop"); ok.varint("active count"); ok.end();
      const ids = []; // announce id → path (ids count START messages from 0)
      const join = (suffix) => [prefix, suffix].map((s) => s.replace(/^\/+|\/+$/g, "")).filter(Boolean).join("/");
      for (;;) {
        const type = await stream.varint(true, "announce type");
        if (type === null) return "announce stream ended";
        const msg = await stream.message(65536);
        if (type === 0) { // START{suffix, hops, warm, cold}
          const path = join(msg.string());
          const hops = msg.varint("hop count");
          if (hops > 256) throw new WireError("too many hops");
          for (let i = 0; i < hops; i++) msg.bigVarint();
          msg.bigVarint(); msg.bigVarint(); msg.end();
          if (ids.length >= 100000) throw new WireError("too many announcements");
          ids.push(path);
          onChange(path, true);
        } else if (type === 1) { // END{id}
          const id = msg.varint("announce id"); msg.end();
          if (id >= ids.length || ids[id] === null) throw new WireError(`ANNOUNCE_END for unknown id ${id}`);
          const path = ids[id];
          ids[id] = null;
          // Another live id may carry the same path (re-announce): only report the last one's end.
          if (!ids.includes(path)) onChange(path, false);
        }
        // type 2 (RESTART/UPDATE: re-pricing) and unknown types: skipped by their size.
      }
    };
    const handle = { closed: false, stop: () => {}, close() { this.closed = true; this.stop(); } };
    handle.done = run();
    return handle;
  }

  // MARK: Tracks

  /** TRACK (§4.3): the publisher's priority, max age and timescale; rejects on a reset (NOT_FOUND…). */
  async trackInfo(path, track, timeoutMs = 5000) {
    const bidi = await this.transport.createBidirectionalStream();
    const stream = new StreamReader(bidi.readable);
    await send(bidi.writable, new Writer().varint(BIDI_TRACK).message(new Writer().string(path).string(track)).bytes(), true);
    try {
      const msg = await withTimeout(stream.message(4096), timeoutMs, `TRACK_INFO ${track}`);
      const info = { priority: msg.u8(), maxAgeMs: msg.bigVarint(), timescale: msg.varint("timescale") };
      msg.end();
      if (info.timescale === 0) throw new WireError("timescale 0");
      return info;
    } finally {
      stream.cancel(CANCEL);
    }
  }

  /**
   * SUBSCRIBE (§4.4) to `track` of broadcast `path`. `onGroup(group)` is called for every group
   * stream (a Group: seq, frameStart, next(), cancel()). Returns a Subscription whose `done`
   * settles with a reason when the subscription ends (END, reset, session closed).
   */
  subscribe(path, track, { priority = 128, maxLatencyMs = 0 } = {}, onGroup) {
    const sub = new Subscription(this, this.nextSubscribeId++, path, track, onGroup);
    this.subscriptions.set(sub.id, sub);
    sub.done = sub.run(priority, maxLatencyMs).finally(() => this.subscriptions.delete(sub.id));
    return sub;
  }

  /** A group stream: `00 size{sub_id, seq, frame_start}` then frames (§4.5). */
  async readGroup(stream) {
    const header = await withTimeout(stream.message(64), 10000, "group header");
    const id = header.varint("subscribe id");
    const seq = header.varint("group sequence");
    const frameStart = header.varint("frame start");
    header.end();
    const sub = this.subscriptions.get(id);
    if (!sub || sub.stopped) { stream.cancel(CANCEL); return; }
    sub.onGroup(new Group(stream, seq, frameStart));
  }
}

export class Subscription {
  constructor(session, id, path, track, onGroup) {
    Object.assign(this, { session, id, path, track, onGroup, stopped: false, start: null });
    this.stop = () => { this.stopped = true; };
  }

  async run(priority, maxLatencyMs) {
    const bidi = await this.session.transport.createBidirectionalStream();
    const stream = new StreamReader(bidi.readable);
    this.stop = () => { this.stopped = true; reset(bidi.writable, CANCEL); stream.cancel(CANCEL); };
    if (this.stopped) { this.stop(); return "stopped"; }
    // id, path, track, priority u8, max latency, group_start (raw), group_end (+1), frame_start, frame_end (+1)
    const body = new Writer().varint(this.id).string(this.path).string(this.track).u8(priority)
      .varint(maxLatencyMs).varint(0).varint(0).varint(0).varint(0);
    await send(bidi.writable, new Writer().varint(BIDI_SUBSCRIBE).message(body).bytes());
    try {
      for (;;) {
        const type = await stream.varint(true, "subscribe response type");
        if (type === null) return "subscription finished";
        const msg = await stream.message(4096);
        if (type === 0) { this.start = msg.varint(); msg.end(); }
        else if (type === 1) { const end = msg.varint(); msg.end(); this.end = end; }
        // type 2 (DROP) and unknown types: nothing for a live viewer to do.
      }
    } catch (e) {
      if (this.stopped) return "stopped";
      throw e;
    } finally {
      this.stop();
    }
  }

  close() { this.stop(); }
}

/** One group stream's frames: `next()` gives { timestamp (BigInt, track timescale), payload } or null at FIN. */
export class Group {
  constructor(stream, seq, frameStart) {
    Object.assign(this, { stream, seq, frameStart, index: frameStart, timestamp: 0n });
  }

  async next() {
    const delta = await this.stream.bigVarint(true);
    if (delta === null) return null;
    this.timestamp += unzigzag(delta);
    const size = safeNumber(await this.stream.bigVarint(), "frame size");
    if (size > MAX_FRAME) throw new WireError(`frame of ${size} bytes exceeds ${MAX_FRAME}`);
    const payload = await this.stream.bytes(size);
    return { index: this.index++, timestamp: this.timestamp, payload };
  }

  cancel(code = CANCEL) { this.stream.cancel(code); }
}

export { describe, errorCode };
