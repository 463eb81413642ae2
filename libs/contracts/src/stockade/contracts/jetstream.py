"""Create the streams and key-value buckets of :mod:`stockade.contracts.streams`: the one place that does.

Needs nats-py when called (every caller talks to NATS already); importing it does not, so the package does not
depend on it.

:func:`ensure_stream` creates a stream with its byte and age limits, or gives an existing one the limits it lacks:
a stream created by an older release without a byte or age limit gets the missing one (an operator's own values
are kept); other settings of an existing stream are left alone (a retention policy cannot be changed to or from a
work queue). :func:`ensure_bucket` binds to a bucket, creating it when missing.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from stockade.contracts.limits import StreamLimits
from stockade.contracts.streams import BucketSpec, StreamSpec

if TYPE_CHECKING:
    from nats.js import JetStreamContext
    from nats.js.api import StreamInfo
    from nats.js.kv import KeyValue

log = logging.getLogger(__name__)
_INSUFFICIENT_STORAGE = 10047  # JSStorageResourcesExceededErr: the byte limit cannot be reserved


class StreamLimitError(RuntimeError):
    """The server cannot reserve a stream's byte limit (its JetStream store is smaller than the limits)."""


async def ensure_stream(js: JetStreamContext, spec: StreamSpec, *, replicas: int = 1) -> StreamInfo:
    """The stream's info after making sure it exists as ``spec`` says, with at least ``replicas`` copies
    (``NatsSettings.stream_replicas``)."""
    from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
    from nats.js.errors import BadRequestError, NotFoundError, ServerError

    bounds = spec.limits
    try:
        info = await js.stream_info(spec.name)
    except NotFoundError:
        config = StreamConfig(
            name=spec.name,
            subjects=list(spec.subjects),
            retention=RetentionPolicy.WORK_QUEUE if spec.retention == "workqueue" else RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            discard=DiscardPolicy.NEW if bounds.discard == "new" else DiscardPolicy.OLD,
            max_bytes=bounds.max_bytes,
            max_age=bounds.max_age_s,
            duplicate_window=spec.duplicate_window_s,
            num_replicas=replicas,
        )
        try:
            created = await js.add_stream(config)
            log.info("created JetStream stream %s (%s)", spec.name, ", ".join(spec.subjects))
            return created
        except BadRequestError:  # another replica created it between our two calls
            info = await js.stream_info(spec.name)
        except ServerError as exc:
            if exc.err_code == _INSUFFICIENT_STORAGE:
                raise StreamLimitError(
                    f"JetStream cannot reserve {bounds.max_bytes} bytes for stream {spec.name}: its file store is "
                    "too small for every stream's byte limit (free disk, raise jetstream max_file_store, or lower "
                    "this stream's max_bytes setting; deploy/README.md, JetStream limits)"
                ) from exc
            raise
    return await _fill_missing_limits(js, info, bounds, replicas, spec.subjects)


async def _fill_missing_limits(
    js: JetStreamContext,
    info: StreamInfo,
    bounds: StreamLimits,
    replicas: int = 1,
    subjects: tuple[str, ...] = (),
) -> StreamInfo:
    config = info.config
    missing: dict[str, float | int | list[str]] = {}
    if subjects and set(config.subjects or ()) != set(subjects):  # the layout changed (prompt.published.v1.*)
        missing["subjects"] = list(subjects)
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


async def ensure_bucket(
    js: JetStreamContext,
    spec: BucketSpec,
    *,
    ttl_s: float,
    replicas: int = 1,
    memory: bool = False,
) -> KeyValue:
    """Bind to the bucket, creating it when missing with TTL ``ttl_s``, ``spec.max_bytes`` (JetStream reserves
    them) and ``replicas`` copies; file storage unless ``memory``. An existing bucket is taken as it is."""
    from nats.js.api import KeyValueConfig, StorageType
    from nats.js.errors import BadRequestError, BucketNotFoundError

    try:
        return await js.key_value(spec.name)
    except BucketNotFoundError:
        config = KeyValueConfig(
            bucket=spec.name,
            history=spec.history,
            ttl=ttl_s,
            storage=StorageType.MEMORY if memory else StorageType.FILE,
            max_bytes=spec.max_bytes,
            replicas=replicas,
        )
        try:
            return await js.create_key_value(config=config)
        except BadRequestError:  # created concurrently by another process
            return await js.key_value(spec.name)
