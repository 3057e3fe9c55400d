# SPDX-License-Identifier: MIT
# Usage: python probe.py HOST PORT ALPN [/path]   (needs aioquic in /tmp/aioq)
# Minimal raw-QUIC MoQT probe: offer one ALPN, send CLIENT_SETUP (draft-14..16 framing), print SERVER_SETUP.
import asyncio, ssl, sys
sys.path.insert(0, "/tmp/aioq")
from aioquic.asyncio import connect
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamDataReceived, ConnectionTerminated
from aioquic.asyncio.protocol import QuicConnectionProtocol

def varint(v):
    if v < 0x40: return bytes([v])
    if v < 0x4000: return (v | 0x4000).to_bytes(2, "big")
    if v < 0x40000000: return (v | 0x80000000).to_bytes(4, "big")
    return (v | 0xC000000000000000).to_bytes(8, "big")

class P(QuicConnectionProtocol):
    def __init__(self, *a, **k):
        super().__init__(*a, **k); self.got = asyncio.get_event_loop().create_future()
    def quic_event_received(self, ev):
        if isinstance(ev, StreamDataReceived) and not self.got.done(): self.got.set_result(ev.data)
        if isinstance(ev, ConnectionTerminated) and not self.got.done(): self.got.set_result(("closed", ev.error_code, ev.reason_phrase))

async def main(host, port, alpn, path):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=[alpn], verify_mode=ssl.CERT_NONE, server_name="localhost")
    async with connect(host, port, configuration=cfg, create_protocol=P, wait_connected=True) as c:
        print("negotiated ALPN:", c._quic.tls.alpn_negotiated)
        params = []
        if path: params.append(varint(0x01) + varint(len(path)) + path.encode())  # PATH (odd key: length-prefixed)
        body = b""
        if alpn == "moq-00":
            body += varint(1) + varint(0xff00000e)  # supported versions: draft-14
        body += varint(len(params)) + b"".join(params)
        msg = b"\x20" + len(body).to_bytes(2, "big") + body
        sid = c._quic.get_next_available_stream_id()
        c._quic.send_stream_data(sid, msg); c.transmit()
        r = await asyncio.wait_for(c.got, 5)
        print("reply:", r if isinstance(r, tuple) else r.hex())

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else ""))
