// SPDX-License-Identifier: MIT
// The hang catalog (`catalog.json`, docs: moq-lite-06.md §6): one complete JSON snapshot per group.
// Renditions are keyed by track name; unknown keys and unknown container kinds are ignored.

import { parseHex } from "./wire.js";

export const CATALOG_TRACK = "catalog.json";
/** Largest catalog accepted (SwiftMoQ's decoder uses the same bound). */
export const MAX_CATALOG = 1 << 20;
/** Unix time of hang's epoch, 2020-01-01T00:00:00Z, in µs. */
const HANG_EPOCH_US = 1577836800 * 1e6;

const utf8 = new TextDecoder("utf-8", { fatal: true });

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isCount = (v) => Number.isSafeInteger(v) && v > 0;

/** Parses one catalog frame. Throws on anything but a JSON object of bounded size. */
export function parseCatalog(bytes) {
  if (bytes.length > MAX_CATALOG) throw new Error(`catalog of ${bytes.length} bytes exceeds ${MAX_CATALOG}`);
  const root = JSON.parse(utf8.decode(bytes));
  if (!isObject(root)) throw new Error("catalog is not a JSON object");
  return root;
}

/** RFC 7396 JSON merge patch (moq-json allows patch frames after a group's first frame). */
export function mergePatch(target, patch) {
  if (!isObject(patch)) return patch;
  const out = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** A rendition's container kind; hang's default is "legacy". */
function containerKind(config) {
  const c = config.container;
  if (c === undefined || c === null) return "legacy";
  return isObject(c) && typeof c.kind === "string" ? c.kind : null;
}

/** The renditions of `section` ("video" / "audio") this page can read, best first. */
function renditions(catalog, section, rank) {
  const list = catalog[section]?.renditions;
  if (!isObject(list)) return [];
  const out = [];
  for (const [name, config] of Object.entries(list)) {
    if (!isObject(config) || typeof config.codec !== "string" || !config.codec) continue;
    if (containerKind(config) !== "legacy") continue; // cmaf, loc, unknown: not supported here
    if (typeof config.broadcast === "string" && config.broadcast) continue; // lives in another broadcast
    let description;
    if (config.description !== undefined && config.description !== null) {
      description = typeof config.description === "string" ? parseHex(config.description) : null;
      if (!description || description.length === 0) continue; // malformed: skip the rendition
    }
    out.push({ name, config, description, rank: rank(config) });
  }
  return out.sort((a, b) => a.rank - b.rank || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Video candidates: H.264 first (smallest first, to decode cheaply in software), then anything else. */
export function videoRenditions(catalog) {
  return renditions(catalog, "video", (c) =>
    (/^(avc1|avc3)\./.test(c.codec) ? 0 : 1e9) + (c.codedWidth || 0) * (c.codedHeight || 0));
}

/** Audio candidates: Opus first. */
export function audioRenditions(catalog) {
  return renditions(catalog, "audio", (c) => (c.codec === "opus" ? 0 : 1));
}

/** A WebCodecs VideoDecoderConfig for a video rendition. */
export function videoDecoderConfig(r) {
  const c = r.config;
  const config = { codec: c.codec, optimizeForLatency: true };
  if (r.description) config.description = r.description;
  if (isCount(c.codedWidth) && isCount(c.codedHeight)) {
    config.codedWidth = c.codedWidth;
    config.codedHeight = c.codedHeight;
  }
  return config;
}

/** A WebCodecs AudioDecoderConfig for an audio rendition (null when rate or channels are missing). */
export function audioDecoderConfig(r) {
  const c = r.config;
  if (!isCount(c.sampleRate) || !isCount(c.numberOfChannels)) return null;
  const config = { codec: c.codec, sampleRate: c.sampleRate, numberOfChannels: c.numberOfChannels };
  if (r.description) config.description = r.description;
  return config;
}

/** What decides whether a rendition change needs a new subscription or decoder. */
export function renditionKey(r) {
  if (!r) return "";
  const c = r.config;
  return JSON.stringify([r.name, c.codec, c.description ?? null, c.codedWidth ?? null, c.codedHeight ?? null,
    c.sampleRate ?? null, c.numberOfChannels ?? null]);
}

/**
 * The Unix time in µs of media timestamp 0, or null when the publisher sent no clock.
 * SwiftMoQ's moqsink writes `"swiftmoq": {"clockEpochUs": N}`. With `useHangClock`, hang's own
 * `"clock": {"wall": W, "timescale": T}` (W in 1/T s since 2020-01-01) is accepted as well.
 */
export function clockEpochUs(catalog, useHangClock = false) {
  const n = catalog.swiftmoq?.clockEpochUs;
  if (Number.isSafeInteger(n) && n >= 0) return { epochUs: n, source: "swiftmoq.clockEpochUs" };
  const clock = catalog.clock;
  if (useHangClock && isObject(clock) && Number.isSafeInteger(clock.wall) && isCount(clock.timescale)) {
    return { epochUs: HANG_EPOCH_US + (clock.wall * 1e6) / clock.timescale, source: "clock.wall" };
  }
  return null;
}
