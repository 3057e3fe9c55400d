// SPDX-License-Identifier: MIT
// Plays one hang broadcast: follows its catalog, subscribes to one video and one audio rendition,
// decodes them with WebCodecs, draws video on the canvas and plays (or just counts) audio.

import {
  CATALOG_TRACK, audioDecoderConfig, audioRenditions, clockEpochUs, mergePatch, parseCatalog, renditionKey,
  videoDecoderConfig, videoRenditions,
} from "./catalog.js";
import { Cursor, describe } from "./wire.js";

const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;

/** Splits a legacy-container frame: `varint(timestamp µs) + codec bytes` (§6.4). */
function legacyFrame(bytes) {
  const c = new Cursor(bytes);
  const timestamp = c.varint("timestamp");
  return { timestamp, data: c.take(c.remaining) };
}

/**
 * True when an H.264 access unit holds an IDR slice (NAL type 5). `lengthSize` is the AVCC NAL length
 * size (from avcC), or 0 for Annex B. Bounded: stops at malformed lengths.
 */
function h264HasIdr(data, lengthSize) {
  if (lengthSize) {
    for (let i = 0, n = 0; i + lengthSize < data.length && n < 256; n++) {
      let len = 0;
      for (let k = 0; k < lengthSize; k++) len = len * 256 + data[i + k];
      i += lengthSize;
      if (len === 0 || i + len > data.length) return false;
      if ((data[i] & 0x1f) === 5) return true;
      i += len;
    }
    return false;
  }
  for (let i = 0; i + 3 < data.length; i++) {
    if (data[i] === 0 && data[i + 1] === 0 && data[i + 2] === 1) {
      if ((data[i + 3] & 0x1f) === 5) return true;
      i += 2;
    }
  }
  return false;
}

/** The median of a list of numbers. */
function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export class Player {
  /** `state` is the shared watch state; `ui.latency(text)` shows the latency line. */
  constructor({ session, path, canvas, state, maxLatencyMs = 0, useHangClock = false, log, ui }) {
    Object.assign(this, { session, path, canvas, state, maxLatencyMs, useHangClock, log, ui });
    this.ctx2d = canvas.getContext("2d", { willReadFrequently: true });
    this.catalogSeq = -1;
    this.clock = null;
    this.video = null;
    this.audio = null;
    this.latencies = [];
    this.lastPixelAt = 0;
    this.stopped = false;
    this.applying = Promise.resolve();
  }

  start() {
    this.state.playing = this.path;
    this.ui.latency("latency: waiting for the catalog");
    this.catalogSub = this.session.subscribe(this.path, CATALOG_TRACK, { priority: 255, maxLatencyMs: 0 },
      (g) => this.readCatalogGroup(g));
    this.catalogSub.done.then(
      (why) => this.log(`catalog: ${why}`),
      (e) => { if (!this.stopped) this.fail(`catalog: ${describe(e)}`); });
  }

  stop() {
    this.stopped = true;
    this.catalogSub?.close();
    this.video?.stop();
    this.audio?.stop();
    if (this.state.playing === this.path) this.state.playing = null;
  }

  fail(message) {
    this.state.error = message;
    this.log(message);
  }

  // MARK: Catalog

  /** One group = one complete snapshot (later frames, if any, are merge patches). Only the newest group counts. */
  async readCatalogGroup(group) {
    if (group.seq < this.catalogSeq) { group.cancel(); return; }
    try {
      let catalog = null;
      for (let frame; (frame = await group.next());) {
        if (group.seq < this.catalogSeq) { group.cancel(); return; }
        catalog = frame.index === 0 || catalog === null ? parseCatalog(frame.payload)
          : mergePatch(catalog, parseCatalog(frame.payload));
        if (group.seq < this.catalogSeq) return;
        this.catalogSeq = group.seq;
        this.state.catalogs = (this.state.catalogs || 0) + 1;
        const snapshot = catalog;
        this.applying = this.applying.then(() => this.applyCatalog(snapshot)).catch((e) => this.fail(`catalog: ${describe(e)}`));
      }
    } catch (e) {
      if (!this.stopped) this.log(`catalog group ${group.seq}: ${describe(e)}`);
    }
  }

  async applyCatalog(catalog) {
    if (this.stopped) return;
    this.clock = clockEpochUs(catalog, this.useHangClock);
    this.state.clockSource = this.clock ? this.clock.source : null;
    if (!this.clock) {
      this.latencies = [];
      this.state.latencyMs = null;
      this.ui.latency("latency: unknown (publisher sent no clock)");
    }
    const video = await this.pick(videoRenditions(catalog), (r) => videoDecoderConfig(r),
      (c) => ("VideoDecoder" in window ? VideoDecoder.isConfigSupported(c) : { supported: false }), "video");
    if (this.stopped) return;
    if (renditionKey(video) !== renditionKey(this.video?.rendition)) {
      this.video?.stop();
      this.video = video ? new VideoTrack(this, video) : null;
      this.video?.start();
    }
    let audio = null;
    try {
      audio = await this.pick(audioRenditions(catalog), (r) => audioDecoderConfig(r),
        (c) => ("AudioDecoder" in window ? AudioDecoder.isConfigSupported(c) : { supported: false }), "audio");
    } catch (e) {
      this.state.audioError = describe(e);
    }
    if (this.stopped) return;
    if (renditionKey(audio) !== renditionKey(this.audio?.rendition)) {
      this.audio?.stop();
      this.audio = audio ? new AudioTrack(this, audio) : null;
      this.audio?.start();
    }
  }

  /** The first candidate the browser can decode (checks cached by rendition key). */
  async pick(candidates, configOf, check, kind) {
    this.supported ??= new Map();
    for (const r of candidates) {
      const config = configOf(r);
      if (!config) continue;
      const key = renditionKey(r);
      if (!this.supported.has(key)) {
        let ok = false;
        try { ok = (await check(config)).supported === true; } catch {}
        this.supported.set(key, ok);
        if (!ok) this.log(`${kind}: ${r.name} (${r.config.codec}) is not decodable here`);
      }
      if (this.supported.get(key)) return { ...r, decoderConfig: config };
    }
    return null;
  }

  // MARK: Output

  /** Draws a decoded frame, measures latency, samples the centre pixel (at most every 250 ms). */
  drawVideo(frame, codedWidth, codedHeight) {
    const w = codedWidth || frame.displayWidth, h = codedHeight || frame.displayHeight;
    if (this.canvas.width !== w || this.canvas.height !== h) { this.canvas.width = w; this.canvas.height = h; }
    this.ctx2d.drawImage(frame, 0, 0, w, h);
    this.state.videoFrames++;
    if (this.clock) {
      const latency = (nowUs() - (this.clock.epochUs + frame.timestamp)) / 1000;
      this.latencies.push(latency);
      if (this.latencies.length > 30) this.latencies.shift();
      this.state.latencyMs = Math.round(median(this.latencies) * 10) / 10;
      this.ui.latency(`latency: ${this.state.latencyMs.toFixed(1)} ms (publish to render, median of ${this.latencies.length})`);
    }
    const t = performance.now();
    if (t - this.lastPixelAt >= 250) {
      this.lastPixelAt = t;
      const d = this.ctx2d.getImageData(w >> 1, h >> 1, 1, 1).data;
      this.state.pixel = [d[0], d[1], d[2]];
    }
  }
}

/** One video rendition: its subscription and its VideoDecoder. Newer groups supersede older ones. */
class VideoTrack {
  constructor(player, rendition) {
    this.player = player;
    this.rendition = rendition;
    const d = rendition.description;
    // AVCC NAL length size from avcC byte 4 (avc1 with a description); 0 = Annex B.
    this.lengthSize = d && d.length > 4 && /^avc[13]\./.test(rendition.config.codec) ? (d[4] & 3) + 1 : 0;
    this.h264 = /^avc[13]\./.test(rendition.config.codec);
    this.current = null;
    this.needKey = true;
    this.stopped = false;
  }

  start() {
    const p = this.player;
    p.state.video = { track: this.rendition.name, codec: this.rendition.config.codec };
    p.log(`video: ${this.rendition.name} ${this.rendition.config.codec}`);
    this.sub = p.session.subscribe(p.path, this.rendition.name, { priority: 128, maxLatencyMs: p.maxLatencyMs },
      (g) => this.onGroup(g));
    this.sub.done.then((why) => p.log(`video: ${why}`), (e) => { if (!this.stopped) p.fail(`video: ${describe(e)}`); });
  }

  stop() {
    this.stopped = true;
    this.sub?.close();
    this.current?.cancel();
    try { this.decoder?.close(); } catch {}
  }

  decoderReady() {
    if (this.decoder && this.decoder.state === "configured") return true;
    try { this.decoder?.close(); } catch {}
    const c = this.rendition.config;
    this.decoder = new VideoDecoder({
      output: (frame) => {
        try { if (!this.stopped) this.player.drawVideo(frame, c.codedWidth, c.codedHeight); }
        finally { frame.close(); }
      },
      error: (e) => { if (!this.stopped) this.player.fail(`video decoder: ${describe(e)}`); },
    });
    this.decoder.configure(this.rendition.decoderConfig);
    this.needKey = true;
    return true;
  }

  onGroup(group) {
    if (this.stopped || (this.current && group.seq <= this.current.seq)) { group.cancel(); return; }
    this.current?.cancel(); // a newer group starts with a keyframe: skip what is left of the old one
    this.current = group;
    this.read(group);
  }

  async read(group) {
    try {
      for (let frame; (frame = await group.next());) {
        if (this.current !== group || this.stopped) return;
        this.decode(frame, group);
      }
    } catch (e) {
      if (this.current === group && !this.stopped) this.player.log(`video group ${group.seq}: ${describe(e)}`);
    }
  }

  decode(frame, group) {
    const { timestamp, data } = legacyFrame(frame.payload);
    if (data.length === 0) return; // the end-of-group marker
    const key = this.h264 ? h264HasIdr(data, this.lengthSize) : frame.index === 0 && group.frameStart === 0;
    this.decoderReady();
    if (this.decoder.decodeQueueSize > 30) this.needKey = true; // far behind: wait for the next keyframe
    if (this.needKey && !key) { this.player.state.videoSkipped = (this.player.state.videoSkipped || 0) + 1; return; }
    this.decoder.decode(new EncodedVideoChunk({ type: key ? "key" : "delta", timestamp, data }));
    this.needKey = false;
  }
}

/** One audio rendition: decoded always (counted), played when an AudioContext runs. */
class AudioTrack {
  constructor(player, rendition) {
    this.player = player;
    this.rendition = rendition;
    this.lastSeq = -1;
    this.stopped = false;
    this.playhead = 0;
  }

  start() {
    const p = this.player;
    p.state.audio = { track: this.rendition.name, codec: this.rendition.config.codec, context: "none" };
    p.log(`audio: ${this.rendition.name} ${this.rendition.config.codec}`);
    this.sub = p.session.subscribe(p.path, this.rendition.name, { priority: 200, maxLatencyMs: p.maxLatencyMs },
      (g) => this.read(g));
    this.sub.done.then((why) => p.log(`audio: ${why}`), (e) => { if (!this.stopped) p.state.audioError = describe(e); });
  }

  stop() {
    this.stopped = true;
    this.sub?.close();
    try { this.decoder?.close(); } catch {}
  }

  /** Groups are read as they come; frames of a group older than the newest decoded one are dropped. */
  async read(group) {
    try {
      for (let frame; (frame = await group.next());) {
        if (this.stopped || group.seq < this.lastSeq) { group.cancel(); return; }
        this.lastSeq = group.seq;
        this.decode(frame);
      }
    } catch (e) {
      if (!this.stopped) this.player.log(`audio group ${group.seq}: ${describe(e)}`);
    }
  }

  decode(frame) {
    try {
      const { timestamp, data } = legacyFrame(frame.payload);
      if (data.length === 0) return;
      if (!this.decoder || this.decoder.state === "closed") {
        this.decoder = new AudioDecoder({
          output: (audio) => { try { this.output(audio); } finally { audio.close(); } },
          error: (e) => { this.player.state.audioError = `audio decoder: ${describe(e)}`; },
        });
        this.decoder.configure(this.rendition.decoderConfig);
      }
      if (this.decoder.decodeQueueSize > 50) return; // behind: drop rather than queue
      this.decoder.decode(new EncodedAudioChunk({ type: "key", timestamp, data }));
    } catch (e) {
      this.player.state.audioError = describe(e);
    }
  }

  output(audio) {
    const state = this.player.state;
    state.audioFrames++;
    try {
      const ctx = audioContext();
      if (state.audio) state.audio.context = ctx ? ctx.state : "none";
      if (!ctx || ctx.state !== "running") return;
      const buffer = ctx.createBuffer(audio.numberOfChannels, audio.numberOfFrames, audio.sampleRate);
      for (let c = 0; c < audio.numberOfChannels; c++) {
        audio.copyTo(buffer.getChannelData(c), { planeIndex: c, format: "f32-planar" });
      }
      const source = ctx.createBufferSource();
      source.buffer = buffer;
      source.connect(ctx.destination);
      const now = ctx.currentTime;
      // Keep a small cushion; resynchronise when starved or drifting too far ahead.
      if (this.playhead < now + 0.01 || this.playhead > now + 0.5) this.playhead = now + 0.05;
      source.start(this.playhead);
      this.playhead += buffer.duration;
    } catch (e) {
      state.audioError = `audio output: ${describe(e)}`;
    }
  }
}

let sharedContext;
/** The page's one AudioContext (null when none can be made). Resumed on the first click. */
export function audioContext() {
  if (sharedContext === undefined) {
    try {
      sharedContext = new AudioContext({ latencyHint: "interactive" });
      if (sharedContext.state !== "running") sharedContext.resume().catch(() => {});
      addEventListener("click", () => sharedContext.resume().catch(() => {}), { once: true });
    } catch {
      sharedContext = null;
    }
  }
  return sharedContext;
}
