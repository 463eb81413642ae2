"""Waiting until the NATS server has every command a client wrote: the fix for a flush that does not.

nats-py's ``Client.flush()`` is documented as "what we have written so far has made it to the server", but it
writes its PING straight to the socket while commands written just before it (a SUB, a PUB) still wait in the
client's buffer for its flusher task (nats-py 2.16, ``Client._send_ping``). The server can answer that PING
before it reads the SUB, so a subscription "flushed" this way may not exist yet when another connection
publishes, and a request then gets "no responders". Two rounds fix it: the flusher has run by the time the first
PONG is read, so the second PING follows every earlier command (figures: docs/decisions.md, "A subscription is
live after sync_with_server"). The same round trip also makes sure a refusal the server sends for an earlier
command (a permissions ``-ERR``) has been read.

Like :mod:`stockade.contracts.jetstream`, it needs nats-py only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nats.aio.client import Client

__all__ = ["sync_with_server"]


async def sync_with_server(nc: Client, timeout_s: float = 5.0) -> None:
    """Return once the server has read every command ``nc`` wrote before the call (two PING/PONG rounds).

    Raises nats-py's ``FlushTimeoutError`` when no PONG comes within ``timeout_s`` (per round)."""
    for _ in range(2):
        await nc.flush(timeout=timeout_s)  # type: ignore[arg-type]  # nats-py annotates int; it takes seconds
