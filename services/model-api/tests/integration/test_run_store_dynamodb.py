"""DynamoDB has no key by time: the reader scans, and refuses a range holding more events than it may scan."""

import pytest

from stockade.model_api.run_filters import parse_filters
from stockade.model_api.run_store import ProjectScope, RunStoreUnavailable
from stockade.model_api.run_store_dynamodb import DynamoRunReader

from .conftest import SAMPLE_PROJECTS, sample_batches, store_dynamo

pytestmark = pytest.mark.dynamodb
SCOPE = ProjectScope(frozenset(SAMPLE_PROJECTS))


async def test_a_range_over_the_scan_cap_is_refused_and_a_project_fits(
    dynamodb_endpoint, unique_name, monkeypatch
):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(var, "testing")
    table = unique_name("guardrail_events")
    await store_dynamo(dynamodb_endpoint, table, sample_batches())
    reader = DynamoRunReader(dynamodb_endpoint, table, region="us-east-1", max_scan=10)
    with pytest.raises(RunStoreUnavailable, match="narrow the time range"):
        await reader.list_runs(SCOPE, parse_filters({}), None, 25)
    page = await reader.list_runs(SCOPE, parse_filters({"project": "shop"}), None, 25)
    assert [r.run_id for r in page.runs] == ["run-clean", "run-masked"]
    missing = DynamoRunReader(dynamodb_endpoint, unique_name("absent"), region="us-east-1")
    with pytest.raises(RunStoreUnavailable, match="does not exist yet"):
        await missing.run(SCOPE, "run-masked", None)
