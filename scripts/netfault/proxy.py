"""A delaying TCP proxy (tc netem is not available here): latency in front of the mon.

Every chunk read from one side is written to the other side `delay` seconds later, order
preserved, so a request/response round trip through the proxy takes `delay_down + delay_up`
longer (the default puts the whole delay on the server->client direction; the mon's banner is
therefore late by the full delay too). asyncio, one process, bounded buffers per connection.
"""
from __future__ import annotations

import asyncio
import signal
from typing import Optional, Tuple

CHUNK = 64 << 10
MAX_QUEUED = 256          # chunks in flight per direction before the reader waits


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Tuple[float, bytes]]" = asyncio.Queue(MAX_QUEUED)

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            if not data:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    sender = asyncio.ensure_future(deliver())
    try:
        while True:
            data = await reader.read(CHUNK)
            await queue.put((loop.time() + delay, data))
            if not data:
                break
        await sender
    except (ConnectionError, asyncio.CancelledError):
        sender.cancel()
    finally:
        try:
            writer.close()
        except Exception:  # noqa: BLE001 - the peer may be gone already
            pass


class DelayProxy:
    def __init__(self, listen: Tuple[str, int], target: Tuple[str, int], delay_down: float,
                 delay_up: float = 0.0) -> None:
        self.listen, self.target = listen, target
        self.delay_down, self.delay_up = delay_down, delay_up
        self.server: Optional[asyncio.AbstractServer] = None
        self.connections = 0

    async def _handle(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            sr, sw = await asyncio.wait_for(asyncio.open_connection(*self.target), 10.0)
        except (OSError, asyncio.TimeoutError):
            cw.close()
            return
        await asyncio.gather(_pump(cr, sw, self.delay_up), _pump(sr, cw, self.delay_down),
                             return_exceptions=True)

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, *self.listen, reuse_address=True)

    async def serve(self, ready=None) -> None:
        await self.start()
        if ready is not None:
            ready()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        self.server.close()
        await self.server.wait_closed()


def run(listen: Tuple[str, int], target: Tuple[str, int], delay_down: float,
        delay_up: float = 0.0, ready=None) -> None:
    asyncio.run(DelayProxy(listen, target, delay_down, delay_up).serve(ready))
