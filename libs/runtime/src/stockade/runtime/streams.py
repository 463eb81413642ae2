"""Moved to :mod:`stockade.contracts.jetstream` (the stream specifications are in :mod:`stockade.contracts.streams`).

:func:`ensure_stream` here keeps the older by-name signature for tests and scripts that make an ad hoc stream; it
builds a :class:`~stockade.contracts.streams.StreamSpec` and calls the one implementation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nats.js.api import RetentionPolicy

from stockade.contracts import jetstream
from stockade.contracts.jetstream import StreamLimitError
from stockade.contracts.limits import STREAM_LIMITS, StreamLimits
from stockade.contracts.streams import StreamSpec

if TYPE_CHECKING:
    from nats.js import JetStreamContext
    from nats.js.api import StreamInfo

__all__ = ["StreamLimitError", "ensure_stream"]


async def ensure_stream(
    js: JetStreamContext,
    name: str,
    subjects: list[str],
    *,
    limits: StreamLimits | None = None,
    retention: RetentionPolicy = RetentionPolicy.LIMITS,
    duplicate_window_s: float = 0.0,
    replicas: int = 1,
) -> StreamInfo:
    """:func:`stockade.contracts.jetstream.ensure_stream` for a stream given by name and subjects (``limits``
    default: :data:`~stockade.contracts.limits.STREAM_LIMITS` of ``name``)."""
    spec = StreamSpec(
        name,
        tuple(subjects),
        limits or STREAM_LIMITS[name],
        "workqueue" if retention == RetentionPolicy.WORK_QUEUE else "limits",
        duplicate_window_s,
    )
    return await jetstream.ensure_stream(js, spec, replicas=replicas)
