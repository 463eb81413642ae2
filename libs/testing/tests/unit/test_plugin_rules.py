"""The plugin's rules seen from a pytest run: markers, CI=true skip->fail, the terminal summary."""

from __future__ import annotations

import pytest

from stockade.testing.ports import free_port

pytest_plugins = ["pytester"]

SERVER_ENV = (
    "POSTGRES_URL",
    "NATS_URL",
    "CLICKHOUSE_URL",
    "DYNAMODB_URL",
    "MONGODB_URL",
    "STOCKADE_CHROMIUM",
)


@pytest.fixture
def clean_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No server URLs, no CI in the environment of the inner pytest run."""
    for name in (*SERVER_ENV, "CI"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return monkeypatch


def test_server_marker_is_applied_to_direct_and_indirect_users(pytester: pytest.Pytester, clean_env) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def repository(postgres_database):
            return postgres_database
        """
    )
    pytester.makepyfile(
        test_sample="""
        def test_direct(nats_url): pass
        def test_indirect(repository): pass
        def test_two(dynamodb_client, clickhouse_client): pass
        def test_none(tmp_path): pass
        """
    )
    # --collect-only: the markers come from the fixture closure, no server is started.
    result = pytester.runpytest("--strict-markers", "--collect-only", "-q", "-m", "postgres")
    result.stdout.fnmatch_lines(["*test_indirect*"])
    assert "test_direct" not in result.stdout.str()
    result = pytester.runpytest("--strict-markers", "--collect-only", "-q", "-m", "nats or dynamodb")
    result.stdout.fnmatch_lines(["*test_direct*", "*test_two*"])
    assert "test_none" not in result.stdout.str()
    result = pytester.runpytest("--strict-markers", "--collect-only", "-q", "-m", "clickhouse and dynamodb")
    result.stdout.fnmatch_lines(["*test_two*"])


def test_markers_are_registered_for_strict_markers(pytester: pytest.Pytester, clean_env) -> None:
    pytester.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.e2e
        @pytest.mark.ml
        @pytest.mark.slow
        @pytest.mark.mongo
        @pytest.mark.browser
        def test_x(): pass
        """
    )
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("--markers")
    for name in ("postgres", "nats", "clickhouse", "dynamodb", "mongo", "browser", "e2e", "ml", "slow"):
        result.stdout.fnmatch_lines([f"@pytest.mark.{name}:*"])


def _dead_postgres_test(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTGRES_URL", f"postgresql://postgres@127.0.0.1:{free_port()}/postgres")
    pytester.makepyfile(
        test_db="""
        def test_uses_db(postgres_url): pass
        def test_plain(): pass
        """
    )


def test_missing_server_skips_with_a_reason_locally(pytester: pytest.Pytester, clean_env) -> None:
    _dead_postgres_test(pytester, clean_env)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*PostgreSQL not available: POSTGRES_URL=*does not answer*"])


def test_missing_server_fails_under_ci(pytester: pytest.Pytester, clean_env) -> None:
    _dead_postgres_test(pytester, clean_env)
    clean_env.setenv("CI", "true")
    result = pytester.runpytest("-rA")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped", 0) == 0
    assert outcomes.get("failed", 0) + outcomes.get("errors", 0) == 1
    assert outcomes["passed"] == 1
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*PostgreSQL not available: POSTGRES_URL=*does not answer*CI=true*",
            "real-server tests: 1 ran: 0 passed, 1 failed, 0 skipped",
            "CI=true: a test skipped for lack of a server is reported as a failure",
        ]
    )


def test_pytest_skip_for_other_reasons_still_skips_under_ci(pytester: pytest.Pytester, clean_env) -> None:
    clean_env.setenv("CI", "true")
    pytester.makepyfile(
        test_other="""
        import pytest
        def test_x(): pytest.skip("not relevant on this platform")
        """
    )
    pytester.runpytest().assert_outcomes(skipped=1)


def test_summary_reports_origin_and_counts(pytester: pytest.Pytester, clean_env) -> None:
    _dead_postgres_test(pytester, clean_env)
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*= stockade real servers =*",
            "PostgreSQL: unavailable (does not answer); 1 test(s): 0 passed, 0 failed, 1 skipped",
            "NATS: not used",
            "ClickHouse: not used",
            "DynamoDB: not used",
            "MongoDB: not used",
            "Chromium: not used",
            "real-server tests: 1 ran: 0 passed, 0 failed, 1 skipped",
        ]
    )


def test_a_test_that_configures_logging_leaves_the_root_logger_as_it_found_it(
    pytester: pytest.Pytester, clean_env
) -> None:
    """The first test installs a handler on its captured stderr at INFO (as configure_logging does); the second
    logs at INFO and prints JSON: without the plugin's restore, logging reports an error on the closed stream
    into the second test's output."""
    pytester.makepyfile(
        """
        import json, logging, sys

        def test_configures(capsys):
            logging.getLogger().addHandler(logging.StreamHandler(sys.stderr))
            logging.getLogger().setLevel("INFO")

        def test_logs_then_prints_json(capsys):
            assert logging.getLogger().level == logging.WARNING
            logging.getLogger("alembic").info("Will assume %s DDL.", "non-transactional")
            print(json.dumps({"ok": True}))
            out, err = capsys.readouterr()
            assert json.loads(out) == {"ok": True} and "Logging error" not in err
        """
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)
