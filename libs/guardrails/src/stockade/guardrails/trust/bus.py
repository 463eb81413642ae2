"""AgentBus: an agent sends attested messages through the trust-broker and reads its verified inbox.

::

    async with AgentBus(AgentBusSettings()) as bus:          # settings from STOCKADE_AGENT_* variables
        result = await bus.send("executor", b'{"task": "summarize"}', capability="summarize")
        if not result.delivered:
            log.warning("rejected: %s (layer %s)", result.reason, result.layer)
        async for message in bus.inbox():                    # only what the trust-broker verified
            handle(message.payload, message.sender, message.trust_level, message.capability)

Sending signs with :meth:`AttestationVerifier.sign` (fresh 128-bit nonce, timestamp in ms), publishes the
payload to ``trust.submit.<receiver>`` with the envelope in the ``Stockade-Attestation`` header, and waits for
the broker's answer. The broker rejects stale, future-dated and replayed envelopes and forged signatures; a
rejection is a value (:class:`SendResult` with ``delivered=False``), not an exception.

The broker answers on ``agent.<id>.reply.<token>`` (``subjects.agent_reply``): the token is fresh per send and
the id is the NATS user the server authenticated, so the broker never publishes where a sender points it.

The inbox is a core NATS subscription to ``agent.<id>.inbox`` in the queue group ``inbox_queue`` (the agent id by
default), opened by :meth:`AgentBus.connect` so nothing sent after it is missed: replicas of one agent share
its messages, each delivered to one replica (deduplicate on :attr:`VerifiedMessage.nonce` if a handler can see
a message twice, for example after a crash mid-handling). Only the trust-broker may publish there (deploy/nats), and it sets the headers from
what it verified, so the sender, trust level and capability :class:`VerifiedMessage` carries are the broker's,
never the sender's claim. Messages arrive at most once and only while connected (no persistence).

Layer D (content re-validation) runs in the broker only when its deployment enables ``content_validation``, and
with the broker's checks (defaults without PII; it never masks a signed payload). A receiver that needs its own
checks (PII masking, stricter or custom ones), or talks to a broker without layer D, calls
``AgentTrustEnforcer.revalidate_upstream_output(message.payload, sender=message.sender)`` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from stockade.contracts import agent_wire, subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.replies import SubmitReply
from stockade.guardrails.errors import CheckUnavailableError, ConfigError
from stockade.guardrails.extras import require
from stockade.guardrails.policies.counters.nats_kv import redacted
from stockade.guardrails.trust.attestation import AttestationVerifier, payload_bytes
from stockade.guardrails.trust.bus_settings import AgentBusSettings
from stockade.guardrails.trust.keys import KeyRing
from stockade.guardrails.trust.levels import TrustLevel

log = logging.getLogger(__name__)

__all__ = ["AgentBus", "AgentBusSettings", "SendResult", "VerifiedMessage", "verified_message"]


@dataclass(frozen=True)
class VerifiedMessage:
    """A payload the trust-broker verified, with what it verified about the sender."""

    payload: bytes
    sender: str
    trust_level: TrustLevel
    capability: str | None
    nonce: str
    key_id: str

    def text(self) -> str:
        return self.payload.decode("utf-8")


@dataclass(frozen=True)
class SendResult:
    """The trust-broker's answer to one submission: delivered, or rejected with its reason and layer."""

    delivered: bool
    receiver: str
    nonce: str
    reason: str | None = None
    layer: str | None = None
    error: str | None = None


def verified_message(headers: Mapping[str, str] | None, payload: bytes) -> VerifiedMessage | None:
    """The delivery as a VerifiedMessage; None when it lacks the headers only the trust-broker sets."""
    h = headers or {}
    sender, trust, nonce = h.get(agent_wire.SENDER), h.get(agent_wire.SENDER_TRUST), h.get(agent_wire.NONCE)
    if not sender or not nonce or trust is None or trust not in TrustLevel.__members__.values():
        return None
    return VerifiedMessage(
        payload=payload,
        sender=sender,
        trust_level=TrustLevel(trust),
        capability=h.get(agent_wire.CAPABILITY) or None,
        nonce=nonce,
        key_id=h.get(agent_wire.KEY_ID, ""),
    )


class AgentBus:
    """One agent's connection to the bus: :meth:`send` through the trust-broker, :meth:`inbox` to read."""

    def __init__(self, settings: AgentBusSettings, *, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.agent_id = settings.agent_id
        keys = KeyRing(
            {settings.agent_id: {settings.signing_key_id: settings.secret()}},
            signing_keys={settings.agent_id: settings.signing_key_id},
            min_secret_bytes=settings.min_secret_bytes,
        )
        self._signer = AttestationVerifier(keys, clock=clock)
        self._nc: Any = None
        self._inbox: Any = None
        self._errors: list[str] = []

    async def __aenter__(self) -> AgentBus:
        return await self.connect()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def connect(self) -> AgentBus:
        """Connect as this agent's NATS user and open its inbox. CheckUnavailableError when NATS is away,
        ConfigError when the NATS user may not read this agent's inbox."""
        nats = require("nats", extra="nats", feature="the agent bus client")
        s = self.settings
        options: dict[str, Any] = {
            "servers": [u.strip() for u in s.nats_url.split(",")],
            "name": f"agent-{s.agent_id}",
            "inbox_prefix": subjects.agent_reply_prefix(s.agent_id),
            "connect_timeout": s.connect_timeout_s,
            "max_reconnect_attempts": -1,
            "error_cb": self._on_error,
        }
        if s.nats_credentials_file is not None:
            options["user_credentials"] = str(s.nats_credentials_file)
        elif s.nats_password is not None:
            options["user"] = s.nats_user or s.agent_id
            options["password"] = s.nats_password.get_secret_value()
        nc = nats.NATS()
        try:  # bound the first connection: nats-py can loop past connect_timeout (nats.py#645)
            await asyncio.wait_for(nc.connect(**options), timeout=s.connect_timeout_s)
        except Exception as exc:
            await nc.close()
            raise CheckUnavailableError(
                f"agent bus: NATS at {redacted(s.nats_url)} unreachable ({type(exc).__name__}: {exc})"
            ) from exc
        inbox = subjects.agent_inbox(s.agent_id)
        self._inbox = await nc.subscribe(inbox, queue=s.inbox_queue or s.agent_id)
        # The server's -ERR for a refused subscription comes before the PONG of a PING written after the SUB
        # (one plain flush can overtake the SUB: 24 of 150 refusals were missed on a loaded machine).
        await sync_with_server(nc, s.connect_timeout_s)
        if any("permissions violation" in e and f'"{inbox}"' in e for e in self._errors):
            await nc.close()
            raise ConfigError(f"NATS user may not subscribe to {inbox}: check deploy/nats/agents.conf")
        self._nc = nc
        return self

    async def close(self) -> None:
        """End the inbox (an iterating ``inbox()`` stops; messages not yet read are dropped) and drain the rest.

        The inbox is unsubscribed first: draining a subscription nobody reads waits for its queue to empty,
        which would hold ``close()`` for nats-py's whole drain timeout (30 s).
        """
        nc, sub, self._nc, self._inbox = self._nc, self._inbox, None, None
        if nc is None or nc.is_closed:
            return
        if sub is not None:
            await sub.unsubscribe()
        await nc.drain()

    async def send(self, receiver: str, payload: bytes | str, *, capability: str | None = None) -> SendResult:
        """Sign ``payload`` for ``receiver`` and submit it; the broker's decision comes back as a value.

        Raises CheckUnavailableError when no trust-broker answers within ``request_timeout_s``.
        """
        nc = self._connected()
        body = payload_bytes(payload)
        envelope = self._signer.sign(self.agent_id, receiver, body, capability=capability)
        nats_errors = require("nats.errors", extra="nats", feature="the agent bus client")
        token = uuid.uuid4().hex
        answer_on = subjects.agent_reply(self.agent_id, token)
        headers = {agent_wire.ATTESTATION: envelope.to_json(), agent_wire.REPLY_TOKEN: token}
        sub = await nc.subscribe(answer_on, max_msgs=1)  # before the publish: the server keeps their order
        try:
            await nc.publish(subjects.trust_submit(receiver), body, reply=answer_on, headers=headers)
            reply = await sub.next_msg(timeout=self.settings.request_timeout_s)
            if not reply.data and (reply.headers or {}).get("Status") == "503":  # the server: no responders
                raise nats_errors.NoRespondersError
        except (TimeoutError, nats_errors.Error) as exc:
            raise CheckUnavailableError(
                f"agent bus: no trust-broker answered a message to {receiver!r} ({type(exc).__name__})"
            ) from exc
        finally:
            with contextlib.suppress(nats_errors.Error):
                await sub.unsubscribe()
        return _send_result(reply.data, receiver, envelope.nonce)

    async def inbox(self) -> AsyncIterator[VerifiedMessage]:
        """Yield each verified message delivered to this agent, until :meth:`close`."""
        self._connected()
        sub = self._inbox
        async for msg in sub.messages:
            message = verified_message(msg.headers, msg.data)
            if message is None:  # cannot come from the broker: only it may publish here
                log.warning("ignored a message on %s without the trust-broker's headers", msg.subject)
                continue
            yield message

    def _connected(self) -> Any:
        if self._nc is None:
            raise RuntimeError("AgentBus is not connected: use 'async with AgentBus(...)' or connect()")
        return self._nc

    async def _on_error(self, exc: Exception) -> None:
        self._errors.append(str(exc).lower())
        log.warning("agent bus %s: NATS error: %s", self.agent_id, exc)


def _send_result(data: bytes, receiver: str, nonce: str) -> SendResult:
    try:
        answer = SubmitReply.model_validate_json(data)
    except ValueError as exc:
        raise CheckUnavailableError(f"agent bus: unreadable trust-broker answer {data[:200]!r}") from exc
    if answer.status == "delivered":
        return SendResult(delivered=True, receiver=receiver, nonce=nonce)
    return SendResult(
        delivered=False,
        receiver=receiver,
        nonce=nonce,
        reason=answer.reason,
        layer=answer.layer,
        error=answer.error,
    )
