#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""QPACK as ls-qpack does it (pylsqpack, pinned in scripts/setup.sh): an independent encoder and
decoder for MoqWebTransportTests. One request per run, one JSON line out:

  qpack_oracle.py encode '[["name", "value"], ...]'  -> {"event": "result", "hex": "..."}
  qpack_oracle.py decode HEX                          -> {"event": "result", "fields": "name: value\\n..."}

Both sides use a dynamic table capacity of 0 (as SwiftMoQ advertises), so the encoder uses the
static table, literals and Huffman coding where it is shorter.
"""
import json
import sys

import pylsqpack


def main() -> int:
    op, arg = sys.argv[1], sys.argv[2]
    if op == "encode":
        encoder = pylsqpack.Encoder()
        _, section = encoder.encode(0, [(n.encode(), v.encode()) for n, v in json.loads(arg)])
        print(json.dumps({"event": "result", "hex": section.hex()}), flush=True)
    elif op == "decode":
        decoder = pylsqpack.Decoder(0, 0)
        try:
            _, headers = decoder.feed_header(0, bytes.fromhex(arg))
        except Exception as exc:  # noqa: BLE001 - reported to the test
            print(json.dumps({"event": "result", "error": f"{type(exc).__name__}: {exc}"}), flush=True)
            return 0
        text = "\n".join(f"{n.decode()}: {v.decode()}" for n, v in headers)
        print(json.dumps({"event": "result", "fields": text}), flush=True)
    else:
        print(json.dumps({"event": "error", "message": f"unknown op {op}"}), flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
