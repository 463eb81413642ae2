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
    """Create the stream if missing; an existing stream is left as configured (operators may tune it)."""
    try:
        await js.stream_info(settings.stream)
        return
    except NotFoundError:
        pass
    config = StreamConfig(
        name=settings.stream,
        subjects=[settings.subject],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        discard=DiscardPolicy.OLD,
        max_age=settings.max_age_s,
        duplicate_window=settings.duplicate_window_s,
    )
    try:
        await js.add_stream(config)
        log.info("created JetStream stream %s (%s)", settings.stream, settings.subject)
    except BadRequestError:  # another replica created it between our two calls
        await js.stream_info(settings.stream)


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
