# SPDX-License-Identifier: MIT
import asyncio, ssl, sys
sys.path.insert(0, "/tmp/aioq")
from aioquic.asyncio import connect
from aioquic.quic.configuration import QuicConfiguration
async def one(port, alpns):
    cfg = QuicConfiguration(is_client=True, alpn_protocols=alpns, verify_mode=ssl.CERT_NONE, server_name="localhost")
    try:
        async with connect("127.0.0.1", port, configuration=cfg) as c:
            return c._quic.tls.alpn_negotiated
    except Exception as e:
        return f"refused ({type(e).__name__})"
async def main(port):
    for alpns in (["moqt-16", "moq-lite-05"], ["moq-00", "moqt-16"], ["moqt-15", "moqt-16"], ["moq-lite-04"], ["moq-lite-06-wip"], ["moq-lite-02"], ["moqt-16", "h3"], ["h3", "moqt-16"]):
        print(alpns, "->", await one(port, alpns))
asyncio.run(main(int(sys.argv[1])))
