import json
import logging

from stockade.runtime.logging import REDACTED, JsonFormatter, configure_logging, redact

KEY = "stk_AbCdEf12_0123456789abcdefghijklmnop_x9Z"


def test_api_keys_tokens_and_passwords_are_redacted():
    line = (
        f"GET /prompts/active-prompt-version?api_key={KEY}&project_id=p "
        f"X-API-Key: {KEY} Authorization: Bearer abcdefghijklmnop "
        "nats://svc:s3cretpw@nats:4222 postgresql+asyncpg://u:pgpass@db/x"
    )
    out = redact(line)
    for secret in (KEY, "abcdefghijklmnop", "s3cretpw", "pgpass"):
        assert secret not in out
    assert "project_id=p" in out and "nats:4222" in out


def _record(msg, *args, **extra):
    record = logging.LogRecord("t", logging.INFO, __file__, 1, msg, args, None)
    for k, v in extra.items():
        setattr(record, k, v)
    return record


def test_json_lines_carry_fields_and_redact_extras():
    fmt = JsonFormatter("prompt-api")
    out = json.loads(
        fmt.format(_record("key %s used", KEY, api_key=KEY, project="p1", headers={"X-API-Key": KEY}))
    )
    assert out["service"] == "prompt-api" and out["level"] == "INFO"
    assert KEY not in json.dumps(out)
    assert out["api_key"] == REDACTED
    assert out["headers"]["X-API-Key"] == REDACTED
    assert out["project"] == "p1"


def test_exceptions_are_logged_redacted():
    fmt = JsonFormatter("x")
    try:
        raise ValueError(f"bad key {KEY}")
    except ValueError:
        import sys

        record = logging.LogRecord("t", logging.ERROR, __file__, 1, "boom", (), sys.exc_info())
    out = json.loads(fmt.format(record))
    assert "ValueError" in out["exc"] and KEY not in out["exc"]


def test_configure_logging_is_idempotent(capsys):
    configure_logging("svc", "INFO")
    configure_logging("svc", "INFO")
    logging.getLogger("demo").info("hello %s", KEY)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert KEY not in err[0] and json.loads(err[0])["msg"].startswith("hello ")
