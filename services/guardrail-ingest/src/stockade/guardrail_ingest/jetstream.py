"""The JetStream side of the HTTP path: make sure the stream exists, publish a batch, wait for the ack."""

from __future__ import annotations

import logging
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError, NotFoundError

from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.settings import StreamSettings

log = logging.getLogger(__name__)


async def ensure_stream(js: JetStreamContext, settings: StreamSettings) -> None:
    """Create the events stream and the dead-letter stream if missing; existing ones are left as configured."""
    await _ensure(
        js,
        StreamConfig(
            name=settings.stream,
            subjects=[settings.subject],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            discard=DiscardPolicy.OLD,
            max_age=settings.max_age_s,
            duplicate_window=settings.duplicate_window_s,
        ),
    )
    await _ensure(
        js,
        StreamConfig(
            name=settings.dead_letter_stream,
            subjects=[settings.dead_letter_subject],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            discard=DiscardPolicy.NEW,
            max_age=settings.dead_letter_max_age_s,
            max_bytes=settings.dead_letter_max_bytes,
            duplicate_window=settings.duplicate_window_s,
        ),
    )


async def _ensure(js: JetStreamContext, config: StreamConfig) -> None:
    name = str(config.name)
    try:
        await js.stream_info(name)
        return
    except NotFoundError:
        pass
    try:
        await js.add_stream(config)
        log.info("created JetStream stream %s (%s)", name, ", ".join(config.subjects or []))
    except BadRequestError:  # another replica created it between our two calls
        await js.stream_info(name)


async def publish_batch(
    js: JetStreamContext, settings: StreamSettings, message: GuardrailEventsReceived, timeout_s: float
) -> Any:
    """Publish with ``Nats-Msg-Id = message.event_id`` (the batch id) and return JetStream's PubAck."""
    return await js.publish(
        settings.subject,
        message.to_bytes(),
        timeout=timeout_s,
        stream=settings.stream,
        headers=message.headers(),
    )
