# SPDX-License-Identifier: MIT
import asyncio, sys, moq
async def main():
    moq.log_level("debug")
    c = moq.Client(sys.argv[1], tls_verify=False, reconnect=False, websocket_enabled=False)
    try:
        await asyncio.wait_for(c.__aenter__(), 3); print("client connected", flush=True); await asyncio.sleep(1)
    except Exception as e: print("client error:", repr(e))
asyncio.run(main())
