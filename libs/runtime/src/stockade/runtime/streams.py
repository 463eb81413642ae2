"""Create a JetStream stream with its byte and age limits, or give an existing one the limits it lacks.

Every stream Stockade creates goes through :func:`ensure_stream`, with the limits of
:data:`stockade.contracts.limits.STREAM_LIMITS` unless a service's settings override them. A stream created by an
older release without a byte or age limit gets the missing one (an operator's own values are kept); other
settings of an existing stream are left alone (a retention policy cannot be changed to or from a work queue).
"""

from __future__ import annotations

import dataclasses
import logging

from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig, StreamInfo
from nats.js.errors import BadRequestError, NotFoundError, ServerError

from stockade.contracts.limits import STREAM_LIMITS, StreamLimits

log = logging.getLogger(__name__)
_INSUFFICIENT_STORAGE = 10047  # JSStorageResourcesExceededErr: the byte limit cannot be reserved


class StreamLimitError(RuntimeError):
    """The server cannot reserve a stream's byte limit (its JetStream store is smaller than the limits)."""


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
    """The stream's info after making sure it exists with a byte and an age limit (``duplicate_window_s`` 0:
    the server's default, two minutes) and at least ``replicas`` copies (NatsSettings.stream_replicas)."""
    bounds = limits or STREAM_LIMITS[name]
    try:
        info = await js.stream_info(name)
    except NotFoundError:
        config = StreamConfig(
            name=name,
            subjects=subjects,
            retention=retention,
            storage=StorageType.FILE,
            discard=DiscardPolicy.NEW if bounds.discard == "new" else DiscardPolicy.OLD,
            max_bytes=bounds.max_bytes,
            max_age=bounds.max_age_s,
            duplicate_window=duplicate_window_s,
            num_replicas=replicas,
        )
        try:
            created = await js.add_stream(config)
            log.info("created JetStream stream %s (%s)", name, ", ".join(subjects))
            return created
        except BadRequestError:  # another replica created it between our two calls
            info = await js.stream_info(name)
        except ServerError as exc:
            if exc.err_code == _INSUFFICIENT_STORAGE:
                raise StreamLimitError(
                    f"JetStream cannot reserve {bounds.max_bytes} bytes for stream {name}: its file store is too "
                    "small for every stream's byte limit (free disk, raise jetstream max_file_store, or lower "
                    "this stream's max_bytes setting; deploy/README.md, JetStream limits)"
                ) from exc
            raise
    return await _fill_missing_limits(js, info, bounds, replicas)


async def _fill_missing_limits(
    js: JetStreamContext, info: StreamInfo, bounds: StreamLimits, replicas: int = 1
) -> StreamInfo:
    config = info.config
    missing: dict[str, float | int] = {}
    if (config.num_replicas or 1) < replicas:  # moved onto a cluster: more copies, never fewer
        missing["num_replicas"] = replicas
    if not config.max_bytes or config.max_bytes < 0:
        missing["max_bytes"] = bounds.max_bytes
    if not config.max_age:
        missing["max_age"] = bounds.max_age_s
    if not missing:
        return info
    updated = await js.update_stream(dataclasses.replace(config, **missing))  # type: ignore[arg-type]
    log.warning("JetStream stream %s had no %s limit; set to %s", config.name, " or ".join(missing), missing)
    return updated
