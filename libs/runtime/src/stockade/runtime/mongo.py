"""One way to open the MongoDB collection of guardrail events: guardrail-ingest's sink writes it, model-api's run
pages read it.

pymongo is not a dependency of stockade-runtime (only of the services that use MongoDB): it is imported when
``open_collection`` is called, so importing this module needs none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pymongo import AsyncMongoClient
    from pymongo.asynchronous.collection import AsyncCollection

DEFAULT_DATABASE = "stockade"  # when the URL names none


class OpenedCollection(NamedTuple):
    client: AsyncMongoClient[dict[str, Any]]
    collection: AsyncCollection[dict[str, Any]]


def open_collection(url: str, collection: str, *, timeout_s: float) -> OpenedCollection:
    """A client on ``url`` (every timeout ``timeout_s``, dates read back timezone-aware) and ``collection`` of
    the URL's database. pymongo connects lazily: nothing is sent until the first command."""
    from pymongo import AsyncMongoClient
    from pymongo.uri_parser import parse_uri

    database = parse_uri(url).get("database") or DEFAULT_DATABASE
    ms = int(timeout_s * 1000)
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        url, serverSelectionTimeoutMS=ms, connectTimeoutMS=ms, timeoutMS=ms, tz_aware=True
    )
    return OpenedCollection(client, client[database][collection])
