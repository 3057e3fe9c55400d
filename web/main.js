// SPDX-License-Identifier: MIT
// The watch page: reads its parameters, connects to the relay, lists announced broadcasts and plays one.
// Query string: url (WebTransport URL), fingerprint (hex SHA-256 of the relay certificate),
// broadcast (play this one), latency (subscription max latency in ms), clock=hang (also use hang's
// catalog clock for the latency readout).
// window.watchState is the machine-readable state (mirrored as JSON in <pre id="state">).

import { MoqSession, connectTransport } from "./moq.js";
import { Player } from "./player.js";
import { describe, parseHex } from "./wire.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

const state = (window.watchState = {
  connected: false, broadcasts: [], playing: null, videoFrames: 0, audioFrames: 0,
  latencyMs: null, pixel: [0, 0, 0], error: null,
});

const logLines = [];
function log(message) {
  console.log(`[watch] ${message}`);
  logLines.push(`${new Date().toISOString().slice(11, 23)} ${message}`);
  if (logLines.length > 200) logLines.shift();
}

const ui = {
  status(text) { $("status").textContent = text; },
  latency(text) { $("latency").textContent = text; },
};

/** Mirrors the state into the page (4× a second; the object itself is always current). */
setInterval(() => {
  $("state").textContent = JSON.stringify(state, null, 1);
  $("error").textContent = state.error ? `error: ${state.error}` : "";
  $("log").textContent = logLines.slice(-12).join("\n");
}, 250);

function defaultUrl() {
  const port = location.port || (location.protocol === "https:" ? "443" : "80");
  const host = location.hostname.includes(":") ? `[${location.hostname}]` : location.hostname;
  return `https://${host}:${port}/anon`;
}

/** The certificate hash: the `fingerprint` parameter, or `/certificate.sha256` from this page's origin. */
async function fingerprint() {
  let text = params.get("fingerprint");
  if (!text) {
    const response = await fetch("/certificate.sha256", { cache: "no-store" });
    if (!response.ok) throw new Error(`GET /certificate.sha256: HTTP ${response.status}`);
    text = (await response.text()).trim();
  }
  const bytes = parseHex(text);
  if (!bytes || bytes.length !== 32) throw new Error(`fingerprint must be 64 hex digits, got "${text.slice(0, 80)}"`);
  return bytes;
}

/** Broadcast paths as announcements carry them: no leading, trailing or repeated slashes. */
const normalise = (path) => path.split("/").filter(Boolean).join("/");
const wanted = params.get("broadcast") ? normalise(params.get("broadcast")) : null; // null: auto-play the first announced
let chosen = wanted;
let player = null;
let session = null;
const maxLatencyMs = Math.max(0, Math.min(60000, parseInt(params.get("latency") || "0", 10) || 0));

function play(path) {
  if (player && player.path === path && !player.stopped) return;
  player?.stop();
  player = null;
  if (!session || !path) return;
  log(`playing ${path}`);
  player = new Player({
    session, path, canvas: $("video"), state, maxLatencyMs, log, ui,
    useHangClock: params.get("clock") === "hang",
  });
  player.start();
  ui.status(`connected; playing ${path}`);
  renderList();
}

function renderList() {
  const list = $("broadcasts");
  list.replaceChildren(...state.broadcasts.map((path) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.textContent = path;
    button.className = path === state.playing ? "playing" : "";
    button.onclick = () => { chosen = path; play(path); };
    item.append(button);
    return item;
  }));
  if (state.broadcasts.length === 0) list.innerHTML = "<li class=dim>no broadcast announced yet</li>";
}

/** ANNOUNCE START/END: keep the list; start or stop playback. */
function onAnnounce(path, active) {
  log(`announce ${active ? "+" : "-"} ${path || "(root)"}`);
  const set = new Set(state.broadcasts);
  if (active) set.add(path); else set.delete(path);
  state.broadcasts = [...set].sort();
  if (!active && player && player.path === path) {
    player.stop();
    player = null;
    if (!wanted) chosen = null;
    ui.status(`connected; ${path} ended${wanted ? ", waiting for it to come back" : ""}`);
  }
  if (!player) {
    const next = chosen ?? state.broadcasts[0];
    if (next !== undefined && state.broadcasts.includes(next)) { chosen = next; play(next); }
  }
  renderList();
}

/** Connects, then watches announcements until the session ends; reconnects with a backoff. */
async function run() {
  const url = params.get("url") || defaultUrl();
  let backoff = 1000;
  for (;;) {
    try {
      ui.status(`connecting to ${url}`);
      const hash = await fingerprint();
      const transport = await connectTransport(url, hash, log);
      session = new MoqSession(transport, log);
      await session.start();
      log(`WebTransport ready (protocol "${transport.protocol || ""}")`);
      await Promise.race([session.serverSetup, session.done.then((why) => { throw new Error(why); })]);
      state.connected = true;
      state.error = null;
      backoff = 1000;
      ui.status(`connected to ${url}${wanted ? `, waiting for ${wanted}` : ""}`);
      const announced = session.announced("", onAnnounce);
      announced.done.then((why) => log(`announcements: ${why}`), (e) => {
        if (!session || session.closed) return;
        state.error = `announcements: ${describe(e)}`;
        if (wanted && !player) play(wanted); // no discovery here: try the named broadcast anyway
      });
      const why = await session.done;
      throw new Error(`session ${why}`);
    } catch (e) {
      state.error = describe(e);
      log(state.error);
    }
    state.connected = false;
    player?.stop();
    player = null;
    session?.close();
    session = null;
    state.broadcasts = [];
    renderList();
    ui.status(`disconnected; retrying in ${backoff / 1000} s`);
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 10000);
  }
}

if (!("WebTransport" in window)) {
  state.error = "this browser has no WebTransport (or the page is not a secure context)";
  ui.status("unsupported browser");
} else if (!("VideoDecoder" in window)) {
  state.error = "this browser has no WebCodecs VideoDecoder";
  ui.status("unsupported browser");
} else {
  renderList();
  run();
}
