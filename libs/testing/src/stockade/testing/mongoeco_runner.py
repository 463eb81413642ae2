"""Run a mongoeco wire-protocol server until SIGTERM/SIGINT (executed by Python >= 3.13, not imported).

``python mongoeco_runner.py --port N`` prints ``READY <port> <mongoeco version>`` once listening.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from importlib.metadata import version


async def serve(host: str, port: int) -> None:
    from mongoeco.engines.memory import MemoryEngine
    from mongoeco.wire.proxy import AsyncMongoEcoProxyServer

    proxy = AsyncMongoEcoProxyServer(engine=MemoryEngine(), host=host, port=port)
    address = await proxy.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"READY {address.port} {version('mongoeco')}", flush=True)
    try:
        await stop.wait()
    finally:
        await proxy.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
