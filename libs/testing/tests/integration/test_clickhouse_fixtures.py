"""clickhouse_client / clickhouse_dsn against embedded chdb (or CLICKHOUSE_URL when set)."""

from __future__ import annotations

import clickhouse_connect


def test_table_round_trip_with_unique_name(clickhouse_client, unique_name) -> None:
    table = unique_name("events")
    clickhouse_client.command(
        f"CREATE TABLE {table} (id UInt32, kind String, score Float64) ENGINE = MergeTree ORDER BY id"
    )
    try:
        rows = [[i, "pii" if i % 2 else "secret", i / 10] for i in range(1000)]
        clickhouse_client.insert(table, rows, column_names=["id", "kind", "score"])
        result = clickhouse_client.query(f"SELECT kind, count() FROM {table} GROUP BY kind ORDER BY kind")
        assert result.result_rows == [("pii", 500), ("secret", 500)]
    finally:
        clickhouse_client.command(f"DROP TABLE IF EXISTS {table}")


def test_second_client_on_the_same_dsn_sees_the_data(clickhouse_client, clickhouse_dsn, unique_name) -> None:
    table = unique_name("shared")
    clickhouse_client.command(f"CREATE TABLE {table} (id UInt32) ENGINE = MergeTree ORDER BY id")
    other = clickhouse_connect.get_client(dsn=clickhouse_dsn)
    try:
        clickhouse_client.insert(table, [[1], [2], [3]], column_names=["id"])
        assert other.query(f"SELECT sum(id) FROM {table}").result_rows == [(6,)]
    finally:
        other.close()
        clickhouse_client.command(f"DROP TABLE IF EXISTS {table}")


def test_server_version_is_modern(clickhouse_client) -> None:
    major = int(clickhouse_client.server_version.split(".")[0])
    assert major >= 23  # Debian's 18.16 would be rejected
