"""DynamoDB: ``DYNAMODB_URL``, else moto's server on a free local port (real HTTP), else skip."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from stockade.testing.ports import port_open
from stockade.testing.report import ServerRecord, report_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
else:
    DynamoDBClient = Any

__all__ = ["DUMMY_CREDENTIALS", "dynamodb_client", "dynamodb_endpoint"]

HOW_TO = "set DYNAMODB_URL=http://host:port (e.g. DynamoDB Local), or pip install 'moto[server]'"
REGION = "us-east-1"
DUMMY_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture(scope="session")
def dynamodb_endpoint(request: pytest.FixtureRequest) -> Iterator[str]:
    """HTTP endpoint URL of a DynamoDB API (pass it as ``endpoint_url``; region us-east-1)."""
    report = report_of(request.config)
    env_url = os.environ.get("DYNAMODB_URL")
    if env_url:
        report.record("dynamodb", ServerRecord("env DYNAMODB_URL", None, env_url))
        yield env_url
        return
    try:
        import moto
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        report.unavailable(
            "dynamodb",
            "moto",
            "moto[server] not installed",
            f"moto server is not importable ({exc}); {HOW_TO}",
        )
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    if not port_open(host, port, timeout=5):
        server.stop()
        report.unavailable(
            "dynamodb",
            "moto",
            "moto server did not listen",
            f"moto server on {url} did not accept connections; {HOW_TO}",
        )
    report.record(
        "dynamodb", ServerRecord("started locally (moto ThreadedMotoServer)", f"moto {moto.__version__}", url)
    )
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dynamodb_client(dynamodb_endpoint: str) -> DynamoDBClient:
    """A boto3 DynamoDB client on ``dynamodb_endpoint`` with dummy credentials, region us-east-1."""
    import boto3

    return boto3.client("dynamodb", endpoint_url=dynamodb_endpoint, region_name=REGION, **DUMMY_CREDENTIALS)
