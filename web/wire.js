// SPDX-License-Identifier: MIT
// moq-lite-06 encoding primitives (docs: moq-lite-06.md §3): QUIC varints, strings,
// size-prefixed messages, and a bounded reader over a WebTransport receive stream.

/** Largest value a JavaScript Number holds exactly; larger varints are refused where a Number is needed. */
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** The largest control message accepted (the Rust side allows 64 MiB; a viewer needs far less). */
export const MAX_MESSAGE = 1 << 20;

/** A protocol error: malformed, truncated or oversized data from the peer. */
export class WireError extends Error {}

const utf8Decoder = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

/** Decodes the varint at `bytes[0..]` (its length is given by the top two bits) as a BigInt. */
function varintBig(bytes) {
  let v = BigInt(bytes[0] & 0x3f);
  for (let i = 1; i < bytes.length; i++) v = (v << 8n) | BigInt(bytes[i]);
  return v;
}

/** Converts a BigInt to a Number, refusing values above 2^53 − 1. */
export function safeNumber(big, what = "value") {
  if (big > BigInt(MAX_SAFE)) throw new WireError(`${what} too large (${big})`);
  return Number(big);
}

/** Zigzag decoding (frame timestamp deltas): u → (u >> 1) ^ −(u & 1). */
export function unzigzag(u) {
  return (u & 1n) ? -((u >> 1n) + 1n) : (u >> 1n);
}

/** A synchronous cursor over one message body; every read checks the bounds. */
export class Cursor {
  constructor(bytes) { this.bytes = bytes; this.pos = 0; }
  get remaining() { return this.bytes.length - this.pos; }
  take(n) {
    if (n > this.remaining) throw new WireError("message too short");
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  u8() { return this.take(1)[0]; }
  bigVarint() {
    if (this.remaining < 1) throw new WireError("message too short");
    return varintBig(this.take(1 << (this.bytes[this.pos] >> 6)));
  }
  varint(what) { return safeNumber(this.bigVarint(), what); }
  bytesField(max = MAX_MESSAGE) {
    const n = this.varint("length");
    if (n > max) throw new WireError("field too long");
    return this.take(n);
  }
  string(max = 4096) {
    try { return utf8Decoder.decode(this.bytesField(max)); }
    catch (e) { throw e instanceof WireError ? e : new WireError("invalid UTF-8"); }
  }
  /** A message must be consumed exactly (the Rust decoder rejects trailing bytes too). */
  end() { if (this.remaining !== 0) throw new WireError("trailing bytes in message"); }
}

/** Builds bytes: varints (Number or BigInt), u8, strings; `message()` adds the size prefix. */
export class Writer {
  constructor() { this.parts = []; this.length = 0; }
  push(bytes) { this.parts.push(bytes); this.length += bytes.length; return this; }
  u8(v) { return this.push(Uint8Array.of(v & 0xff)); }
  varint(value) {
    const v = BigInt(value);
    if (v < 0n || v >= (1n << 62n)) throw new WireError(`varint out of range: ${v}`);
    let len = v < 64n ? 1 : v < 16384n ? 2 : v < 1073741824n ? 4 : 8;
    const out = new Uint8Array(len);
    let x = v;
    for (let i = len - 1; i >= 0; i--) { out[i] = Number(x & 0xffn); x >>= 8n; }
    out[0] |= { 1: 0x00, 2: 0x40, 4: 0x80, 8: 0xc0 }[len];
    return this.push(out);
  }
  string(s) { const b = utf8Encoder.encode(s); return this.varint(b.length).push(b); }
  /** Appends `size(body) + body`. */
  message(body) { return this.varint(body.length).push(body.bytes()); }
  bytes() {
    const out = new Uint8Array(this.length);
    let off = 0;
    for (const p of this.parts) { out.set(p, off); off += p.length; }
    return out;
  }
}

/** The encoded bytes of a QUIC varint (SETUP parameter values carry these). */
export function varintBytes(value) { return new Writer().varint(value).bytes(); }

/**
 * Reads a WebTransport ReadableStream incrementally. Chunks are queued without copying; `take(n)`
 * assembles exactly n bytes. Callers bound every length they wait for, so a peer cannot make the
 * reader buffer without limit.
 */
export class StreamReader {
  constructor(readable) {
    this.reader = readable.getReader();
    this.chunks = [];
    this.avail = 0;
    this.done = false;
  }

  /** Waits until `n` bytes are buffered; false when the stream ended first. */
  async fill(n) {
    while (this.avail < n) {
      if (this.done) return false;
      const { value, done } = await this.reader.read();
      if (done) { this.done = true; break; }
      if (value && value.byteLength) {
        const chunk = value instanceof Uint8Array ? value : new Uint8Array(value);
        this.chunks.push(chunk);
        this.avail += chunk.byteLength;
      }
    }
    return this.avail >= n;
  }

  /** Removes and returns `n` buffered bytes (`fill(n)` must have succeeded). */
  take(n) {
    if (n === 0) return new Uint8Array(0);
    const first = this.chunks[0];
    if (first.byteLength >= n) {
      this.avail -= n;
      if (first.byteLength === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let off = 0;
    while (off < n) {
      const c = this.chunks[0];
      const k = Math.min(c.byteLength, n - off);
      out.set(c.subarray(0, k), off);
      off += k;
      if (k === c.byteLength) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    this.avail -= n;
    return out;
  }

  /** True when the stream ended cleanly with nothing left. */
  async atEnd() { return !(await this.fill(1)); }

  /** The next varint as a BigInt; null on a clean end of stream when `eofOk`. */
  async bigVarint(eofOk = false) {
    if (!(await this.fill(1))) {
      if (eofOk) return null;
      throw new WireError("stream ended inside a message");
    }
    const len = 1 << (this.chunks[0][0] >> 6);
    if (!(await this.fill(len))) throw new WireError("stream ended inside a varint");
    return varintBig(this.take(len));
  }

  /** The next varint as a Number (refusing values above 2^53 − 1); null on a clean end when `eofOk`. */
  async varint(eofOk = false, what = "varint") {
    const v = await this.bigVarint(eofOk);
    return v === null ? null : safeNumber(v, what);
  }

  /** Exactly `n` bytes, or an error if the stream ends first. */
  async bytes(n) {
    if (!(await this.fill(n))) throw new WireError("stream ended inside a message");
    return this.take(n);
  }

  /** A size-prefixed message body as a Cursor (null on a clean end when `eofOk`). */
  async message(max = MAX_MESSAGE, eofOk = false) {
    const size = await this.varint(eofOk, "message size");
    if (size === null) return null;
    if (size > max) throw new WireError(`message of ${size} bytes exceeds ${max}`);
    return new Cursor(await this.bytes(size));
  }

  /** Stops reading (STOP_SENDING with `code` where the browser supports stream error codes). */
  cancel(code = 1) {
    this.done = true;
    this.chunks = [];
    this.avail = 0;
    this.reader.cancel(streamError(code)).catch(() => {});
  }
}

/** A reason object carrying a WebTransport stream error code (moq stream codes, §4.10). */
export function streamError(code) {
  try { return new WebTransportError({ streamErrorCode: code }); } catch { return undefined; }
}

/** Reads a stream error code from whatever a failed read or write threw (null when none). */
export function errorCode(e) {
  return e && typeof e.streamErrorCode === "number" ? e.streamErrorCode : null;
}

/** Names of the moq stream error codes a viewer may meet (§4.10). */
export const STREAM_CODES = {
  0x0: "INTERNAL", 0x1: "CANCEL", 0x2: "DELIVERY_TIMEOUT", 0x3: "SESSION_CLOSED", 0x4: "GOING_AWAY",
  0x5: "TOO_FAR_BEHIND", 0x12: "MALFORMED_TRACK", 0x31: "CONTROL_TIMEOUT", 0x32: "GROUP_TOO_LARGE",
  0x33: "NOT_FOUND", 0x34: "OLD", 0x35: "EVICTED", 0x36: "UNROUTABLE", 0x37: "WRONG_SIZE",
  0x38: "FRAME_TOO_LARGE", 0x39: "TIMESTAMP_MISMATCH",
};

/** A readable description of an error, with the moq stream code name when there is one. */
export function describe(e) {
  const code = errorCode(e);
  const msg = (e && e.message) || String(e);
  return code === null ? msg : `${STREAM_CODES[code] || "code " + code} (stream code 0x${code.toString(16)}): ${msg}`;
}

/** Parses hex (colons and whitespace allowed), e.g. a SHA-256 fingerprint. Null when malformed. */
export function parseHex(text) {
  const clean = String(text).replace(/[\s:]/g, "");
  if (clean.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(clean)) return null;
  const out = new Uint8Array(clean.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(clean.substr(i * 2, 2), 16);
  return out;
}

/** Resolves with `promise`, or rejects after `ms` with `what` timed out. */
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
