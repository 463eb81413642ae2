"""Settings names used by docker-compose and deploy/k8s, and the record/batch-id rules (no network)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from stockade.guardrail_ingest.records import RECORD_FIELDS, batch_id, to_records
from stockade.guardrail_ingest.settings import GuardrailIngestSettings, SinkSettings
from stockade.guardrail_ingest.sinks import build_sink
from stockade.guardrails.storage.wire import DB_TYPES, GuardrailBatch


def _batch(ids: list[str], **run: object) -> GuardrailBatch:
    return GuardrailBatch.model_validate(
        {
            "run": {"run_id": "run-1", **run},
            "events": [
                {
                    "event_id": i,
                    "kind": "check",
                    "name": "pii",
                    "occurred_at": datetime(
                        2026, 11, 22, 13, 0, tzinfo=timezone(timedelta(hours=1))
                    ).isoformat(),
                }
                for i in ids
            ],
        }
    )


def test_compose_environment_names_select_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUARDRAIL_INGEST_SINK__KIND", "clickhouse")
    monkeypatch.setenv("GUARDRAIL_INGEST_SINK__URL", "http://stockade:pw@clickhouse:8123/stockade")
    monkeypatch.setenv("GUARDRAIL_INGEST_SINK__TABLE", "gr_events")
    monkeypatch.setenv("GUARDRAIL_INGEST_JETSTREAM__WORKERS", "4")
    s = GuardrailIngestSettings()
    assert (s.sink.kind, s.sink.resolved_url(), s.sink.table) == (
        "clickhouse",
        "http://stockade:pw@clickhouse:8123/stockade",
        "gr_events",
    )
    assert s.jetstream.workers == 4 and s.jetstream.stream == "GUARDRAIL_EVENTS"
    assert s.jetstream.subject == "guardrail.events.v1"


def test_sink_kinds_are_the_db_type_literals_and_bad_values_fail() -> None:
    assert set(SinkSettings.model_fields["kind"].annotation.__args__) == set(DB_TYPES)  # type: ignore[union-attr]
    with pytest.raises(ValidationError):
        SinkSettings(kind="postgres")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        SinkSettings(table="events; DROP TABLE x")


def test_build_sink_constructs_without_connecting() -> None:
    for kind, cls in (("mongodb", "MongoSink"), ("dynamodb", "DynamoSink"), ("clickhouse", "ClickHouseSink")):
        sink = build_sink(SinkSettings(kind=kind, url="http://127.0.0.1:1" if kind != "mongodb" else None))  # type: ignore[arg-type]
        assert type(sink).__name__ == cls and sink.kind == kind


def test_batch_id_depends_on_the_event_ids_only() -> None:
    a = batch_id(_batch(["e1", "e2"]))
    assert a == batch_id(_batch(["e2", "e1"], project_id="other"))  # order and run fields do not matter
    assert a != batch_id(_batch(["e1", "e3"]))
    assert isinstance(a, uuid.UUID)


def test_records_copy_run_fields_dedupe_and_normalise_time() -> None:
    batch = _batch(["e1", "e1", "e2"], project_id="p", agent_id="a", labels={"k": "v"}, correlation_id="job")
    received = datetime(2026, 11, 22, 12, 30, tzinfo=UTC)
    records = to_records(batch, received)
    assert [r["event_id"] for r in records] == ["e1", "e2"]
    assert all(set(r) == set(RECORD_FIELDS) for r in records)
    first = records[0]
    assert (first["run_id"], first["project_id"], first["agent_id"], first["correlation_id"]) == (
        "run-1",
        "p",
        "a",
        "job",
    )
    assert first["occurred_at"] == "2026-11-22T12:00:00+00:00"  # stored in UTC
    assert first["received_at"] == received.isoformat() and first["labels"] == {"k": "v"}


def test_openapi_documents_the_post_body_and_reply() -> None:
    from stockade.guardrail_ingest.main import create_app

    spec = create_app(GuardrailIngestSettings()).openapi()
    post = spec["paths"]["/api/v1/guardrails/{db_type}"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["required"]) == {"run", "events"}
    assert "event_id" in body["properties"]["events"]["items"]["properties"]  # inlined, no dangling $ref
    assert "$ref" not in str(body)
    assert "202" in post["responses"]


def test_an_audit_record_is_filed_under_the_events_project_else_the_deployments() -> None:
    from stockade.contracts import ApiKeyRevoked, TrustRejected, subjects
    from stockade.guardrail_ingest.audit import to_record

    named = TrustRejected(sender="intern", receiver="executor", reason="bad_signature", project_id="payments")
    unnamed = TrustRejected(sender=None, receiver="ghost", reason="malformed")
    ingest_key = ApiKeyRevoked(key_id="k1", owner_id="u1", project_id="agents")
    user_key = ApiKeyRevoked(key_id="k2", owner_id="u1")
    filed = {
        event.event_id: to_record(event.subject, event.to_bytes(), "fallback")["project_id"]
        for event in (named, unnamed, ingest_key, user_key)
    }
    assert filed == {
        named.event_id: "payments",
        unnamed.event_id: "fallback",
        ingest_key.event_id: "agents",
        user_key.event_id: "fallback",
    }
    assert to_record(subjects.TRUST_REJECTED, unnamed.to_bytes(), None)["project_id"] is None
