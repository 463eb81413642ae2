"""dynamodb_endpoint / dynamodb_client against moto's server over real HTTP (or DYNAMODB_URL)."""

from __future__ import annotations

import urllib.request

import pytest
from botocore.exceptions import ClientError


def _create_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})


def test_endpoint_is_real_http(dynamodb_endpoint: str) -> None:
    assert dynamodb_endpoint.startswith("http://")
    request = urllib.request.Request(
        dynamodb_endpoint,
        data=b"{}",
        headers={
            "X-Amz-Target": "DynamoDB_20120810.ListTables",
            "Content-Type": "application/x-amz-json-1.0",
            "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/dynamodb/aws4_request, "
            "SignedHeaders=host, Signature=x",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert b"TableNames" in response.read()


def test_conditional_put_and_isolated_tables(dynamodb_client, unique_name) -> None:
    first, second = unique_name("quota"), unique_name("quota")
    _create_table(dynamodb_client, first)
    _create_table(dynamodb_client, second)
    try:
        dynamodb_client.put_item(
            TableName=first,
            Item={"pk": {"S": "org-1"}, "n": {"N": "1"}},
            ConditionExpression="attribute_not_exists(pk)",
        )
        with pytest.raises(ClientError) as err:
            dynamodb_client.put_item(
                TableName=first,
                Item={"pk": {"S": "org-1"}, "n": {"N": "2"}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        assert err.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
        item = dynamodb_client.get_item(TableName=first, Key={"pk": {"S": "org-1"}})["Item"]
        assert item["n"] == {"N": "1"}
        assert "Item" not in dynamodb_client.get_item(TableName=second, Key={"pk": {"S": "org-1"}})
    finally:
        dynamodb_client.delete_table(TableName=first)
        dynamodb_client.delete_table(TableName=second)
