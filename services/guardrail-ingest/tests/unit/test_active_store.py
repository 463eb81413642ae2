"""The ordering rule of the active store and where each store's connection settings come from (no network)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from stockade.contracts import DbConfigActivated
from stockade.guardrail_ingest.active_store import ActiveState, ActiveStore, from_event
from stockade.guardrail_ingest.settings import GuardrailIngestSettings, SinkSettings

T0 = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def state(db_type: str, minutes: int, source: str = "event") -> ActiveState:
    return ActiveState(
        db_type=db_type,
        source=source,  # type: ignore[arg-type]
        db_config_id=f"cfg-{db_type}",
        activated_at=T0 + timedelta(minutes=minutes),
    )


def test_the_default_holds_until_any_configuration_is_known() -> None:
    changed: list[str] = []
    store = ActiveStore("mongodb", on_change=lambda s: changed.append(s.db_type))
    assert (store.db_type, store.state.source) == ("mongodb", "default")
    assert store.offer(state("clickhouse", 0, "stream"))
    assert store.db_type == "clickhouse" and changed == ["clickhouse"]


def test_a_later_activation_wins_and_an_older_one_cannot_undo_it() -> None:
    store = ActiveStore("mongodb")
    store.offer(state("dynamodb", 5))
    assert not store.offer(state("clickhouse", 1, "stream"))  # the stream's older message
    assert not store.offer(state("clickhouse", 1, "model-api"))  # a reply to a request sent before the event
    assert store.db_type == "dynamodb"
    assert store.offer(state("clickhouse", 9))
    assert store.db_type == "clickhouse"


def test_model_apis_answer_wins_when_nothing_happened_since_the_request() -> None:
    """Clocks of two model-api replicas can disagree; the database's answer repairs the order."""
    store = ActiveStore("mongodb")
    store.offer(state("dynamodb", 5))
    assert store.offer(state("clickhouse", 1, "model-api"), authoritative=True)
    assert (store.db_type, store.state.source) == ("clickhouse", "model-api")


def test_an_unknown_store_kind_is_ignored() -> None:
    store = ActiveStore("mongodb")
    assert not store.offer(state("cassandra", 5), authoritative=True)
    assert store.db_type == "mongodb"


def test_an_event_of_an_older_producer_does_not_say_which_store() -> None:
    assert from_event(DbConfigActivated(db_config_id="cfg-1"), "event") is None
    new = from_event(DbConfigActivated(db_config_id="cfg-1", db_type="dynamodb", activated_at=T0), "event")
    assert new is not None and (new.db_type, new.activated_at) == ("dynamodb", T0)
    future = DbConfigActivated(db_config_id="cfg-1", db_type="dynamodb", activated_at=T0, schema_version=2)
    assert from_event(future, "event") is None  # a version this release does not read: ask model-api


def test_each_store_has_its_own_connection_settings(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "clickhouse_url").write_text("http://u:secret@clickhouse:8123/db\n")
    monkeypatch.setenv("GUARDRAIL_INGEST_SINK__KIND", "mongodb")
    monkeypatch.setenv("GUARDRAIL_INGEST_SINK__URL", "mongodb://legacy/stockade")
    monkeypatch.setenv("GUARDRAIL_INGEST_SINK__DYNAMODB_URL", "http://dynamodb:8000")
    monkeypatch.setenv("GUARDRAIL_INGEST_SINK__SECRETS_DIR", str(tmp_path))
    sink = GuardrailIngestSettings().sink
    assert sink.resolved_url("mongodb") == "mongodb://legacy/stockade"  # SINK__URL still serves SINK__KIND
    assert sink.resolved_url("dynamodb") == "http://dynamodb:8000"
    assert sink.resolved_url("clickhouse") == "http://u:secret@clickhouse:8123/db"  # from the secret file
    assert SinkSettings(kind="clickhouse", url="chdb:///x").resolved_url("mongodb") == (
        "mongodb://127.0.0.1:27017/stockade"  # SINK__URL belongs to SINK__KIND only
    )
    assert SinkSettings(mongodb_url="mongodb://own/db", url="mongodb://legacy/db").resolved_url() == (
        "mongodb://own/db"
    )
