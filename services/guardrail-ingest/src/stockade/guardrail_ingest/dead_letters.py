"""Dead letters: guardrail events the store refused on each of ``dead_letter_after`` deliveries.

The sink worker publishes one :class:`~stockade.contracts.GuardrailEventDeadLettered` per refused event to the
dead-letter stream (``GUARDRAIL_DEAD_LETTERS``, subject ``guardrail.dead_lettered.v1``) and acknowledges the batch
it came in; the other events of that batch are stored. ``stockade admin dead-letters list`` shows them and
``replay`` queues them again as a new batch (after the store or the event was fixed), then deletes them here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from nats.errors import MaxPayloadError
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from pydantic import ValidationError

from stockade.contracts import GuardrailEventDeadLettered, GuardrailEventsReceived
from stockade.guardrail_ingest.batching import message_limit, split_batch
from stockade.guardrail_ingest.jetstream import publish_batch
from stockade.guardrail_ingest.settings import StreamSettings
from stockade.runtime.tracing import inject

_NAMESPACE = uuid.UUID("0d5c1d2e-7f3b-4a7e-9a51-2f4f2b8e6c11")


@dataclass(frozen=True)
class DeadLetter:
    """One message of the dead-letter stream, with its stream sequence (what ``replay`` takes)."""

    sequence: int
    message: GuardrailEventDeadLettered


def dead_letter(
    record: dict[str, Any],
    *,
    reason: str,
    attempts: int,
    batch: GuardrailEventsReceived,
    sequence: int | None,
) -> GuardrailEventDeadLettered:
    """The dead letter of ``record``; its id is fixed per (batch, event), so a repeated publish is dropped."""
    key = f"{batch.event_id}:{record.get('event_id')}"
    return GuardrailEventDeadLettered(
        event_id=uuid.uuid5(_NAMESPACE, key),
        correlation_id=batch.correlation_id,
        db_type=batch.db_type,
        reason=reason,
        attempts=attempts,
        batch_id=str(batch.event_id),
        stream_sequence=sequence,
        record=record,
    )


async def publish_dead_letter(
    js: JetStreamContext,
    settings: StreamSettings,
    message: GuardrailEventDeadLettered,
    timeout_s: float = 5.0,
) -> None:
    """Publish and wait for the ack. A record too large to fit beside its reason loses its payload (its size and
    the reason stay): the event is unstorable anyway and the dead letter must not be refused as well."""
    try:
        await _publish(js, settings, message, timeout_s)
    except MaxPayloadError:
        payload = message.record.get("payload")
        note = {"dropped": f"payload of {len(str(payload))} characters too large for a dead letter"}
        slim = message.model_copy(update={"record": {**message.record, "payload": note}})
        await _publish(js, settings, slim, timeout_s)


async def _publish(
    js: JetStreamContext, settings: StreamSettings, message: GuardrailEventDeadLettered, timeout_s: float
) -> None:
    await js.publish(
        settings.dead_letter_subject,
        message.to_bytes(),
        timeout=timeout_s,
        stream=settings.dead_letter_stream,
        headers=dict(inject(message.headers())),
    )


async def list_dead_letters(
    js: JetStreamContext, settings: StreamSettings, limit: int = 100
) -> list[DeadLetter]:
    """The oldest ``limit`` dead letters (unreadable messages are skipped)."""
    info = await js.stream_info(settings.dead_letter_stream)
    found: list[DeadLetter] = []
    if not info.state.messages:
        return found
    for sequence in range(info.state.first_seq, info.state.last_seq + 1):
        if len(found) >= limit:
            break
        letter = await _get(js, settings, sequence)
        if letter is not None:
            found.append(letter)
    return found


async def replay(
    js: JetStreamContext, settings: StreamSettings, sequences: list[int], *, max_payload: int
) -> tuple[int, list[int]]:
    """Queue the dead letters at ``sequences`` again as new batches, then delete them from the dead-letter stream.

    Returns (events queued, sequences not found). Each replayed message gets a fresh id, so JetStream's duplicate
    window cannot swallow an event replayed twice; the stores still keep each event once.
    """
    letters = [letter for s in sequences if (letter := await _get(js, settings, s)) is not None]
    missing = sorted(set(sequences) - {letter.sequence for letter in letters})
    by_store: dict[str, list[DeadLetter]] = {}
    for letter in letters:
        by_store.setdefault(letter.message.db_type, []).append(letter)
    queued = 0
    for db_type, group in by_store.items():
        records = [letter.message.record for letter in group]
        for part in split_batch(
            records, db_type=db_type, correlation_id=None, limit=message_limit(max_payload)
        ):
            fresh = part.model_copy(update={"event_id": uuid.uuid4()})
            await publish_batch(js, settings, fresh, timeout_s=5.0)
            queued += len(part.events)
        for letter in group:
            await js.delete_msg(settings.dead_letter_stream, letter.sequence)
    return queued, missing


async def _get(js: JetStreamContext, settings: StreamSettings, sequence: int) -> DeadLetter | None:
    try:
        raw = await js.get_msg(settings.dead_letter_stream, sequence)
    except NotFoundError:  # deleted (replayed) or expired
        return None
    try:
        return DeadLetter(sequence, GuardrailEventDeadLettered.model_validate_json(raw.data or b""))
    except ValidationError:
        return None
