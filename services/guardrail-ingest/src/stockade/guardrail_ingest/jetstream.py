"""The JetStream side of the HTTP path: make sure the streams exist, publish a batch, wait for the ack."""

from __future__ import annotations

import logging
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy

from stockade.contracts import GuardrailEventsReceived
from stockade.contracts.limits import StreamLimits
from stockade.guardrail_ingest.settings import StreamSettings
from stockade.runtime.streams import ensure_stream as ensure_stream_with_limits
from stockade.runtime.tracing import inject

log = logging.getLogger(__name__)


async def ensure_stream(js: JetStreamContext, settings: StreamSettings, replicas: int = 1) -> None:
    """Create the events stream (a work queue) and the dead-letter stream with their limits if missing; give an
    existing one a byte or age limit it lacks (stockade.runtime.streams); ``replicas`` copies of each."""
    events = await ensure_stream_with_limits(
        js,
        settings.stream,
        [settings.subject],
        limits=StreamLimits(settings.max_bytes, settings.max_age_s, "new"),
        retention=RetentionPolicy.WORK_QUEUE,
        duplicate_window_s=settings.duplicate_window_s,
        replicas=replicas,
    )
    if events.config.retention != RetentionPolicy.WORK_QUEUE:
        log.warning(
            "stream %s keeps stored batches until max_age (retention %s, made by an older release); recreate it "
            "as a work queue when it is drained (deploy/README.md, JetStream limits)",
            settings.stream,
            events.config.retention,
        )
    await ensure_stream_with_limits(
        js,
        settings.dead_letter_stream,
        [settings.dead_letter_subject],
        limits=StreamLimits(settings.dead_letter_max_bytes, settings.dead_letter_max_age_s, "new"),
        duplicate_window_s=settings.duplicate_window_s,
        replicas=replicas,
    )


async def publish_batch(
    js: JetStreamContext, settings: StreamSettings, message: GuardrailEventsReceived, timeout_s: float
) -> Any:
    """Publish with ``Nats-Msg-Id = message.event_id`` (the batch id) and return JetStream's PubAck."""
    return await js.publish(
        settings.subject,
        message.to_bytes(),
        timeout=timeout_s,
        stream=settings.stream,
        headers=dict(inject(message.headers())),  # the request's trace goes on to the sink workers
    )
