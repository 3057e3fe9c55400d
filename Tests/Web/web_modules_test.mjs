// SPDX-License-Identifier: MIT
// Unit checks of the watch page's protocol and catalog modules (web/wire.js, moq.js, catalog.js),
// run without a browser:  node Tests/Web/web_modules_test.mjs   (Node 18+; prints "all ok").
// The examples come from docs moq-lite-06.md (varint captures, zigzag deltas, the 0.4.18 catalogs).
import assert from "node:assert";
import {
  audioDecoderConfig, audioRenditions, clockEpochUs, mergePatch, parseCatalog, videoDecoderConfig, videoRenditions,
} from "../../web/catalog.js";
import { Group } from "../../web/moq.js";
import { Cursor, StreamReader, WireError, Writer, parseHex, unzigzag } from "../../web/wire.js";

const hex = (b) => Buffer.from(b).toString("hex");
const utf8 = (s) => new TextEncoder().encode(s);
const zigzag = (s) => (s >= 0n ? s << 1n : ((-s) << 1n) - 1n);

/** A ReadableStream delivering `bytes` in chunks of `chunk` bytes (1 = the worst case for the reader). */
function streamOf(bytes, chunk = 1) {
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i >= bytes.length) controller.close();
      else { controller.enqueue(bytes.slice(i, i + chunk)); i += chunk; }
    },
  });
}

// Varints: minimal encodings as the Rust side writes them (§3), the 62-bit bound, 2^53 refused as a Number.
assert.equal(hex(new Writer().varint(37).bytes()), "25");
assert.equal(hex(new Writer().varint(5000).bytes()), "5388");
assert.equal(hex(new Writer().varint(1000000).bytes()), "800f4240");
assert.equal(hex(new Writer().varint(2n ** 53n).bytes()), "c020000000000000");
assert.throws(() => new Writer().varint(2n ** 62n));
const c = new Cursor(Uint8Array.from([0x40, 0x01, 0x80, 0, 0, 0, 0xc0, 0x20, 0, 0, 0, 0, 0, 1]));
assert.equal(c.varint(), 1); // non-minimal encodings are accepted
assert.equal(c.varint(), 0);
assert.throws(() => c.varint(), WireError); // 2^53 + 1
assert.throws(() => new Cursor(Uint8Array.from([0x80, 1])).varint(), WireError); // truncated

// Zigzag frame deltas: 0x030d3e = 199998 = zigzag(99999).
assert.equal(unzigzag(199998n), 99999n);
assert.equal(unzigzag(1n), -1n);
assert.equal(unzigzag(0n), 0n);

// Group frames read one byte at a time: absolute first timestamp, then deltas (also negative), empty payloads.
const body = new Writer()
  .varint(zigzag(100n)).varint(3).push(Uint8Array.from([1, 2, 3]))
  .varint(zigzag(33333n)).varint(0)
  .varint(zigzag(-1n)).varint(1).u8(9)
  .bytes();
const group = new Group(new StreamReader(streamOf(body)), 7, 0);
let frame = await group.next();
assert.equal(frame.timestamp, 100n);
assert.equal(hex(frame.payload), "010203");
frame = await group.next();
assert.equal(frame.timestamp, 33433n);
assert.equal(frame.payload.length, 0);
frame = await group.next();
assert.equal(frame.timestamp, 33432n);
assert.equal(frame.index, 2);
assert.equal(await group.next(), null);

// Malformed input fails instead of hanging or buffering without bound.
await assert.rejects(new Group(new StreamReader(streamOf(Uint8Array.from([0, 5, 1, 2]), 3)), 1, 0).next(), WireError);
await assert.rejects(new Group(new StreamReader(streamOf(new Writer().varint(0).varint(1 << 30).bytes())), 1, 0).next(), WireError);
await assert.rejects(new StreamReader(streamOf(new Writer().varint(5000).bytes())).message(100), WireError);

// The 0.4.18 avc1 + Opus catalog (§6.3 a).
const rust = parseCatalog(utf8(`{"video":{"renditions":{"0.avc1":{"codec":"avc1.42c00d","description":"0142c00dffe100116742c00d8c68141f26a0c020c0f08846a001000468ce3c80","codedWidth":320,"codedHeight":240,"bitrate":88280,"framerate":30.0,"container":{"kind":"legacy"}}}},"audio":{"renditions":{"1.opus":{"codec":"opus","sampleRate":48000,"numberOfChannels":2,"description":"4f707573486561640102380180bb0000000000","container":{"kind":"legacy"}}}},"archive":{"track":"timeline.z","timescale":1000},"clock":{"wall":218152279435821,"timescale":1000000}}`));
const video = videoRenditions(rust)[0];
assert.equal(video.name, "0.avc1");
assert.equal((video.description[4] & 3) + 1, 4); // AVCC 4-byte NAL lengths
assert.deepEqual(Object.keys(videoDecoderConfig(video)).sort(),
  ["codec", "codedHeight", "codedWidth", "description", "optimizeForLatency"]);
assert.equal(audioDecoderConfig(audioRenditions(rust)[0]).sampleRate, 48000);
assert.equal(clockEpochUs(rust), null); // no swiftmoq clock: latency unknown
assert.equal(clockEpochUs(rust, true).source, "clock.wall");

// SwiftMoQ's clock; unsupported containers and malformed descriptions leave their renditions out.
const swift = {
  video: { renditions: {
    v: { codec: "avc1.64001f", codedWidth: 1280, codedHeight: 720 },
    x: { codec: "avc1.4d401f", container: { kind: "cmaf", init: "" } },
    bad: { codec: "avc1.42c01e", description: "zz" },
  } },
  swiftmoq: { clockEpochUs: 1796154683692425 },
};
assert.deepEqual(videoRenditions(swift).map((r) => r.name), ["v"]);
assert.equal(clockEpochUs(swift).epochUs, 1796154683692425);
assert.throws(() => parseCatalog(utf8("[1]")));
assert.throws(() => parseCatalog(Uint8Array.from([0xff])));
assert.deepEqual(mergePatch({ a: 1, b: { c: 2 } }, { b: { c: null, d: 3 } }), { a: 1, b: { d: 3 } });

// Fingerprints: colons allowed, odd length refused.
assert.equal(hex(parseHex("ab:CD")), "abcd");
assert.equal(parseHex("abc"), null);

console.log("all ok");
