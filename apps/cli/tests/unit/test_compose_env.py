"""``stockade compose-env``: a random value for every secret docker-compose.yml requires, kept across runs."""

import re
import stat
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from stockade.cli import compose_env
from stockade.cli.main import app

ROOT = Path(__file__).resolve().parents[4]
COMPOSE = ROOT / "docker-compose.yml"


def _values(env_file: Path) -> dict[str, str]:
    lines = [line for line in env_file.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


def test_every_required_secret_of_the_real_compose_file_gets_a_strong_random_value(tmp_path):
    required = compose_env.required_variables(COMPOSE.read_text())
    assert "POSTGRES_PASSWORD" in required and "AGENT_TREASURER_HMAC_SECRET" in required
    assert "TOXICITY_CLASSIFIER_API_KEY" in required
    assert len(required) == 18 and all(name != "VAR" for name in required)  # not the header comment's
    first = compose_env.write_env(COMPOSE, tmp_path / "a.env")
    compose_env.write_env(COMPOSE, tmp_path / "b.env")
    assert first.created and first.added == required and first.kept == []
    a, b = _values(tmp_path / "a.env"), _values(tmp_path / "b.env")
    assert sorted(a) == sorted(required)
    for name, value in a.items():
        assert re.fullmatch(r"s[0-9a-f]{48}", value), name  # a letter first (nats-server), URL-safe, 24 bytes
        assert value != b[name]
    assert len(set(a.values())) == len(a)
    assert stat.S_IMODE((tmp_path / "a.env").stat().st_mode) == 0o600


def test_existing_values_are_kept_and_only_the_missing_ones_added(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("# mine\nPOSTGRES_PASSWORD=my-own-choice\nexport MONGO_PASSWORD=also-mine\nOTHER=1")
    result = compose_env.write_env(COMPOSE, env_file)
    assert not result.created and "POSTGRES_PASSWORD" not in result.added and "MONGO_PASSWORD" in result.kept
    values = _values(env_file)
    assert values["POSTGRES_PASSWORD"] == "my-own-choice" and values["OTHER"] == "1"
    assert (
        env_file.read_text().startswith("# mine\n") and "\nOTHER=1\n# random secrets" in env_file.read_text()
    )
    again = compose_env.write_env(COMPOSE, env_file)
    assert again.added == [] and _values(env_file) == values
    assert "nothing changed" in compose_env.report(again)


def test_the_command_and_the_plain_script_print_names_never_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docker-compose.yml").write_text(
        '# ${COMMENTED:?no}\nx: "${ONE_PASSWORD:?set it}"\ny: "${TWO_SECRET:?set it} ${ONE_PASSWORD:?again}"\nz: ${OPTIONAL:-a}\n'
    )
    result = CliRunner().invoke(app, ["compose-env"])
    assert result.exit_code == 0, result.output
    values = _values(tmp_path / ".env")
    assert sorted(values) == ["ONE_PASSWORD", "TWO_SECRET"]
    assert "ONE_PASSWORD, TWO_SECRET" in result.output
    assert not any(v in result.output for v in values.values())
    script = ROOT / "apps/cli/src/stockade/cli/compose_env.py"  # runs with the standard library alone
    plain = subprocess.run(
        [sys.executable, "-I", str(script), "--env-file", "other.env"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert plain.returncode == 0, plain.stderr
    assert sorted(_values(tmp_path / "other.env")) == ["ONE_PASSWORD", "TWO_SECRET"]
    missing = subprocess.run(
        [sys.executable, "-I", str(script), "--compose-file", "nope.yml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr
