"""The activation event and the active-configuration reply that guardrail-ingest follows."""

from datetime import UTC, datetime

from stockade.contracts import ActiveDbConfig, DbConfigActivated, subjects


def test_an_activation_from_an_older_producer_still_parses():
    old = DbConfigActivated.model_validate_json(
        '{"event_id": "6f1c1d8e-1f7e-4d59-9f0c-3b8a4b1f7c2a", "occurred_at": "2026-11-24T12:00:00Z",'
        ' "correlation_id": null, "schema_version": 1, "db_config_id": "cfg-1"}'
    )
    assert old.db_type is None and old.activated_at is None
    assert old.subject == subjects.DBCONFIG_ACTIVATED


def test_the_activation_names_its_store_and_the_reply_round_trips():
    at = datetime(2026, 11, 24, 12, tzinfo=UTC)
    event = DbConfigActivated(db_config_id="cfg-2", db_type="clickhouse", name="analytics", activated_at=at)
    assert DbConfigActivated.model_validate_json(event.to_bytes()).db_type == "clickhouse"
    reply = ActiveDbConfig(db_config_id="cfg-2", db_type="clickhouse", name="analytics", activated_at=at)
    parsed = ActiveDbConfig.model_validate_json(reply.model_dump_json())
    assert parsed == reply and parsed.schema_version == 1
    assert subjects.DBCONFIG_CMD_ACTIVE in subjects.COMMANDS
