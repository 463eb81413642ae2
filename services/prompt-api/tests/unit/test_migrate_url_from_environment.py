"""The migration job reads the database URL from an environment variable (``--url-env``), so the password in it
never shows in a process list (finding L8)."""

import sqlite3

import pytest

from stockade.prompt_api.migrate import main


def test_the_url_comes_from_the_named_variable(tmp_path, monkeypatch):
    target = tmp_path / "migrated.db"
    monkeypatch.setenv("STOCKADE_TEST_DB_URL", f"sqlite+aiosqlite:///{target}")
    assert main(["--url-env", "STOCKADE_TEST_DB_URL"]) == 0
    tables = {row[0] for row in sqlite3.connect(target).execute("SELECT name FROM sqlite_master")}
    assert {"api_keys", "prompts"} <= tables


def test_an_unset_variable_is_an_error_not_the_default_database(monkeypatch, capsys):
    monkeypatch.delenv("STOCKADE_TEST_DB_URL", raising=False)
    with pytest.raises(SystemExit) as stop:
        main(["--url-env", "STOCKADE_TEST_DB_URL"])
    assert stop.value.code == 2 and "STOCKADE_TEST_DB_URL is not set" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--url", "sqlite:///x.db", "--url-env", "STOCKADE_TEST_DB_URL"])  # one or the other
