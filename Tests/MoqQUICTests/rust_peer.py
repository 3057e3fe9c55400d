# SPDX-License-Identifier: MIT
"""The real Rust moq implementation (PyPI moq-rs 0.5.1 over moq-ffi) as a peer for MoqQUIC's tests.

  rust_peer.py server            prints "READY <port> <sha256 fingerprint>", accepts sessions
                                 (printing "ACCEPTED" or "REJECTED <error>") until stdin closes.
  rust_peer.py client PORT FP    connects to moql://127.0.0.1:PORT pinned to FP; prints "CONNECTED"
                                 or "FAILED <error>"; exits.
"""
import asyncio
import sys

import moq


async def serve() -> None:
    origin = moq.OriginProducer()
    async with moq.Server("127.0.0.1:0", tls_generate=["localhost"], publish=origin, subscribe=origin) as server:
        port = server.local_addr.rsplit(":", 1)[1]
        print("READY", port, server.cert_fingerprints()[0], flush=True)
        sessions = []  # keep every accepted session referenced, or it closes

        async def accept_all() -> None:
            async for request in server:
                try:
                    sessions.append(await request.accept())
                    print("ACCEPTED", flush=True)
                except Exception as e:  # noqa: BLE001 - report and keep serving
                    print("REJECTED", repr(e), flush=True)

        task = asyncio.create_task(accept_all())
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        task.cancel()


async def connect(port: str, fingerprint: str) -> int:
    try:
        client = moq.Client(f"moql://127.0.0.1:{port}", tls_fingerprints=[fingerprint], reconnect=False)
        await asyncio.wait_for(client.__aenter__(), timeout=30)
        print("CONNECTED", flush=True)
        await client.__aexit__(None, None, None)
        return 0
    except Exception as e:  # noqa: BLE001 - the test reads the text
        print("FAILED", repr(e), flush=True)
        return 1


def main() -> int:
    if sys.argv[1:2] == ["server"]:
        asyncio.run(serve())
        return 0
    if sys.argv[1:2] == ["client"] and len(sys.argv) == 4:
        return asyncio.run(connect(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
