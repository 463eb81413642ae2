"""The JetStream side of the HTTP path: make sure the streams exist, publish a batch, wait for the ack."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy

from stockade.contracts import GuardrailEventsReceived, subjects
from stockade.contracts.jetstream import ensure_stream as contracts_ensure_stream
from stockade.contracts.streams import stream_spec_for
from stockade.guardrail_ingest.settings import StreamSettings
from stockade.runtime.tracing import inject

log = logging.getLogger(__name__)


async def ensure_stream(js: JetStreamContext, settings: StreamSettings, replicas: int = 1) -> None:
    """Create the events stream (a work queue) and the dead-letter stream of stockade.contracts.streams, with the
    names, subjects, limits and duplicate window of ``settings``, if missing; give an existing one a byte or age
    limit it lacks (stockade.contracts.jetstream); ``replicas`` copies of each."""
    events_spec = replace(
        stream_spec_for(subjects.GUARDRAIL_EVENTS).with_limits(settings.max_bytes, settings.max_age_s),
        name=settings.stream,
        subjects=(settings.subject,),
        duplicate_window_s=settings.duplicate_window_s,
    )
    events = await contracts_ensure_stream(js, events_spec, replicas=replicas)
    if events.config.retention != RetentionPolicy.WORK_QUEUE:
        log.warning(
            "stream %s keeps stored batches until max_age (retention %s, made by an older release); recreate it "
            "as a work queue when it is drained (deploy/README.md, JetStream limits)",
            settings.stream,
            events.config.retention,
        )
    dead_spec = replace(
        stream_spec_for(subjects.GUARDRAIL_DEAD_LETTERED).with_limits(
            settings.dead_letter_max_bytes, settings.dead_letter_max_age_s
        ),
        name=settings.dead_letter_stream,
        subjects=(settings.dead_letter_subject,),
        duplicate_window_s=settings.duplicate_window_s,
    )
    await contracts_ensure_stream(js, dead_spec, replicas=replicas)


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
