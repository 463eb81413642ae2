"""Run pages over HTTP, reading events that guardrail-ingest's sinks stored in a real ClickHouse (chdb), a real
MongoDB wire server and a DynamoDB server, through guardrail-ingest's typed commands on a real NATS server (each
test runs once per store)."""

import csv
import io
import re
from datetime import UTC, datetime, timedelta

import httpx

from stockade.model_api.console.runs.filters import Cursor


def run_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-run-id="([^"]+)"', html)


async def test_runs_list_newest_first_with_outcomes_and_cursor_paging(runs_client):
    first = await runs_client.get("/runs")
    assert first.status_code == 200
    ids = run_ids(first.text)
    assert ids[:3] == ["run-trust", "run-clean", "run-masked"] and len(ids) == 25
    assert "run-old" not in first.text  # 30 days back: outside the default seven days
    masked_row = re.search(r'<tr data-run-id="run-masked">.*?</tr>', first.text, re.S).group(0)
    assert (
        'class="outcome block"' in masked_row and "exfiltration" in masked_row and "support-bot" in masked_row
    )
    seen = list(ids)
    page = first
    while (m := re.search(r'href="/runs\?([^"]*cursor=[^"]+)" rel="next"', page.text)) is not None:
        page = await runs_client.get("/runs?" + m.group(1).replace("&amp;", "&"))
        assert page.status_code == 200
        seen += run_ids(page.text)
    assert len(seen) == len(set(seen)) == 60  # every run once, across three pages
    assert seen[3:] == [f"bulk-{i:03d}" for i in range(57)]


async def test_each_filter_narrows_the_runs(runs_client):
    async def ids(**params):
        response = await runs_client.get("/runs", params=params)
        assert response.status_code == 200, response.text
        return run_ids(response.text)

    assert await ids(project="bank") == ["run-trust"]
    assert await ids(agent="support-bot") == ["run-clean", "run-masked"]
    assert await ids(outcome="block") == ["run-trust", "run-masked"]
    assert await ids(outcome="allow", project="shop") == ["run-clean"]
    assert await ids(check="exfiltration") == ["run-masked"]
    assert await ids(action="mask", project="shop") == ["run-masked"]
    assert len(await ids(project="bulk", outcome="mask")) == 19
    # run-old is 30 days back from when the conftest was imported: a day either side of it (a calendar day from
    # now missed it when the suite crossed midnight, or when it lay in the day's last minute)
    old = datetime.now(UTC) - timedelta(days=30)
    since, until = ((old + timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M") for h in (-24, 24))
    assert await ids(**{"from": since, "to": until}) == ["run-old"]
    assert await ids(check="it's %(since)s {a:String} \\ \"x") == []  # bound as a value, whatever it holds
    assert await ids(agent="' OR 1=1 --") == []
    nothing = await runs_client.get("/runs", params={"project": "nope"})
    assert "No runs match these filters" in nothing.text


async def test_bad_filters_are_422_with_the_problem_next_to_the_form(runs_client):
    cases = [
        ({"outcome": "explode"}, "outcome: must be one of block, mask, warn, allow"),
        ({"action": "x"}, "action: must be one of"),
        ({"from": "yesterday"}, "from: not a date and time"),
        ({"from": "2026-02-01T00:00", "to": "2026-01-01T00:00"}, "from: must be before"),
        ({"project": "a\x01b"}, "project: at most 128 characters"),
        ({"agent": "x" * 500}, "agent: at most 128 characters"),
        ({"cursor": "not-a-cursor"}, "cursor: not a page link"),
        (
            {"cursor": Cursor(last_at=datetime.now(UTC), project_id="p", run_id="r").encode()[:-3] + "!!"},
            "cursor:",
        ),
        ({"from": "2000-01-01", "to": "2026-01-01"}, "at most 366 days"),
        ({"to": "0001-01-02"}, "to: must lie between 1971 and 2200"),
        ({"from": "9999-12-24", "to": "9999-12-31"}, "from: must lie between"),
        ({"from": "2026-13-45"}, "from: not a date and time"),
        ({"from": "2026-11-01T25:00"}, "from: not a date and time"),
    ]
    for params, message in cases:
        response = await runs_client.get("/runs", params=params)
        assert response.status_code == 422, (params, response.status_code)
        assert 'role="alert"' in response.text and message in response.text.replace("&#39;", "'")
        assert 'id="run-filters"' in response.text  # the form is still there, with what was typed
    kept = await runs_client.get("/runs", params={"outcome": "explode", "project": "shop"})
    assert 'name="project" value="shop"' in kept.text
    for path in ("/runs/overview?from=nonsense", "/runs/export.csv?outcome=zzz", "/runs/export.json?to=x"):
        assert (await runs_client.get(path)).status_code == 422
    assert (await runs_client.get("/runs/export.xml")).status_code == 404


async def test_run_page_shows_the_timeline_without_raw_values(runs_client):
    page = await runs_client.get("/run/run-masked", params={"project": "shop"})
    assert page.status_code == 200
    kinds = re.findall(r'<tr data-kind="([a-z_]+)" data-name="([a-z_]+)"', page.text)
    assert kinds == [
        ("check", "pii"),
        ("pii_audit", "pii"),
        ("check", "toxicity"),
        ("generate", "generate"),
        ("check", "exfiltration"),
    ]
    assert "EMAIL_ADDRESS × 2" in page.text and "PERSON × 1" in page.text and "SECRET × 1" in page.text
    assert "21.5" in page.text and "0.93" in page.text and "950.0" in page.text  # took, score, +ms
    assert "greeting" in page.text and "team=care" in page.text and "prod" in page.text
    # which platform policy version made each decision: v2 was published before the exfiltration block
    assert re.findall(r'<td data-policy="([^"]*)">', page.text) == ["support v1"] * 4 + ["support v2"]
    assert 'href="/projects/shop/policies/support?from=1&amp;to=2"' in page.text
    trust = await runs_client.get("/run/run-trust")
    assert "below the floor trusted" in trust.text and "verify_message" in trust.text
    missing = await runs_client.get("/run/no-such-run")
    assert missing.status_code == 404 and "no stored run" in missing.text
    assert (await runs_client.get("/run/x%01y")).status_code == 404
    assert (await runs_client.get("/run/%ff%fe")).status_code == 404
    assert (await runs_client.get("/run/run-masked", params={"project": "a\x00"})).status_code == 404
    odd = await runs_client.get("/runs?project=%ff%fe&agent=%E2%80%AE")
    assert odd.status_code == 200 and "No runs match" in odd.text


async def test_export_csv_and_json_hold_the_filtered_events(runs_client):
    csv_answer = await runs_client.get("/runs/export.csv", params={"project": "shop"})
    assert csv_answer.status_code == 200 and csv_answer.headers["content-type"].startswith("text/csv")
    assert "attachment" in csv_answer.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(csv_answer.text)))
    assert {r["run_id"] for r in rows} == {"run-masked", "run-clean"} and len(rows) == 7
    exfil = next(r for r in rows if r["name"] == "exfiltration")
    assert (
        exfil["action"] == "block"
        and exfil["duration_ms"] == "3.25"
        and '"SECRET": 1' in exfil["finding_types"]
        and (exfil["policy_name"], exfil["policy_version"]) == ("support", "2")
    )
    clean = next(r for r in rows if r["run_id"] == "run-clean")
    assert (clean["policy_name"], clean["policy_version"]) == ("", "")  # a local configuration's event
    as_json = (await runs_client.get("/runs/export.json", params={"check": "pii", "action": "mask"})).json()
    names = sorted((e["run_id"], e["kind"]) for e in as_json["events"])
    assert ("run-masked", "check") in names and ("run-masked", "pii_audit") in names
    assert all(e["action"] == "mask" for e in as_json["events"])
    assert next(e for e in as_json["events"] if e["run_id"] == "run-masked" and e["kind"] == "check")[
        "finding_types"
    ] == {"PERSON": 1, "EMAIL_ADDRESS": 2}
    blocked = (
        await runs_client.get("/runs/export.json", params={"outcome": "block", "project": "shop"})
    ).json()
    assert {e["run_id"] for e in blocked["events"]} == {"run-masked"} and len(blocked["events"]) == 5


async def test_overview_charts_and_numbers(runs_client):
    page = await runs_client.get("/runs/overview")
    assert page.status_code == 200
    text = page.text
    assert '<figure data-check="pii"><figcaption>pii: 0 blocked, 20 masked' in text  # 19 bulk + run-masked
    assert '<figure data-check="exfiltration"><figcaption>exfiltration: 1 blocked, 0 masked' in text
    assert text.count('<svg class="chart"') == 5 and "<script" not in text.split("</head>")[1]
    findings = re.search(r'data-testid="findings">.*?</table>', text, re.S).group(0)
    assert re.findall(r"<td>([A-Z_]+)</td><td class=\"num\">(\d+)</td>", findings) == [
        ("PERSON", "20"),
        ("EMAIL_ADDRESS", "2"),
        ("SECRET", "1"),
    ]
    assert re.search(r'<tr data-check="toxicity"><td>toxicity</td><td class="num">2</td>', text)
    assert "below the floor trusted" in re.search(r'data-testid="trust">.*?</table>', text, re.S).group(0)
    today = re.search(r'data-testid="today">.*?</table>', text, re.S).group(0)
    assert "Trust rejections" in today
    narrowed = await runs_client.get("/runs/overview", params={"project": "bank"})
    assert "No check blocked or masked in this range." in narrowed.text


async def test_an_export_of_more_events_than_a_page_streams_all_of_them_scoped(runs_client):
    """The console reads the export in pages of 7 events (runs_client's settings), in replies of at most 16 KiB:
    all the user's events come, in order, and none of a project the user is not a member of."""
    as_json = (await runs_client.get("/runs/export.json")).json()
    events = as_json["events"]
    assert as_json["complete"] is True
    assert (
        len(events) == len({e["event_id"] for e in events}) == 7 + 1 + 57
    )  # shop, bank and bulk; not run-old
    assert [e["occurred_at"] for e in events] == sorted((e["occurred_at"] for e in events), reverse=True)
    rows = list(csv.DictReader(io.StringIO((await runs_client.get("/runs/export.csv")).text)))
    assert [r["event_id"] for r in rows] == [e["event_id"] for e in events]
    foreign = (await runs_client.get("/runs/export.json", params={"project": "elsewhere"})).json()
    assert foreign["events"] == []


async def test_without_guardrail_ingest_the_run_pages_are_a_clear_503(
    settings_for, login, postgres_database, nats_url, unique_name
):
    from stockade.identity import create_user
    from stockade.model_api.main import create_app
    from stockade.model_api.settings import RunStoreSettings

    app = create_app(settings_for(postgres_database, nats_url, 0, runs=RunStoreSettings(timeout_s=2)))
    async with app.router.lifespan_context(app):
        email = f"{unique_name('user')}@example.org"
        async with app.state.service.sessions() as s:
            await create_user(s, email, "correct horse battery staple")
            await s.commit()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            assert (await login(client, email)).status_code == 303
            for path in ("/runs", "/runs/overview", "/run/run-masked", "/runs/export.csv"):
                page = await client.get(path)
                assert page.status_code == 503, path
                assert "guardrail-ingest" in page.text, path


async def test_run_pages_need_a_session(runs_client):
    runs_client.cookies.clear()
    for path in ("/runs", "/runs/overview", "/run/run-masked", "/runs/export.json"):
        response = await runs_client.get(path)
        assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")
