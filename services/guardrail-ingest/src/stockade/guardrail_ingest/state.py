"""What guardrail-ingest's startup hook builds and its shutdown hook stops (``create_service_app``'s typed state).

``follower`` exists when ``active.follow`` asks for it, ``stores`` when the replica runs sink workers
(``jetstream.workers``); ``tasks`` holds the loops (sink workers, audit consumers, the sampler).
"""

from __future__ import annotations

from dataclasses import dataclass

from stockade.guardrail_ingest.active_store import ActiveStoreFollower
from stockade.guardrail_ingest.ingest import Ingest
from stockade.guardrail_ingest.sinks.router import StoreRouter
from stockade.runtime.background import Tasks


@dataclass(frozen=True)
class IngestState:
    ingest: Ingest
    tasks: Tasks
    follower: ActiveStoreFollower | None
    stores: StoreRouter | None
