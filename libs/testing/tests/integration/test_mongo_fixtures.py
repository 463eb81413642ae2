"""mongodb_url / mongodb_client against a mongoeco wire-protocol server (or MONGODB_URL)."""

from __future__ import annotations

import pytest
from pymongo.errors import DuplicateKeyError


async def test_insert_find_and_unique_index(mongodb_client, unique_name) -> None:
    db = mongodb_client[unique_name("db")]
    users = db["users"]
    try:
        await users.create_index("email", unique=True)
        await users.insert_one({"email": "a@example.com", "name": "Ada"})
        with pytest.raises(DuplicateKeyError):
            await users.insert_one({"email": "a@example.com", "name": "Imposter"})
        found = await users.find_one({"email": "a@example.com"})
        assert found is not None and found["name"] == "Ada"
        assert await users.count_documents({}) == 1
    finally:
        await mongodb_client.drop_database(db.name)


async def test_databases_are_isolated(mongodb_client, unique_name) -> None:
    one, two = mongodb_client[unique_name("db")], mongodb_client[unique_name("db")]
    try:
        await one["items"].insert_many([{"n": i} for i in range(5)])
        assert await one["items"].count_documents({}) == 5
        assert await two["items"].count_documents({}) == 0
    finally:
        await mongodb_client.drop_database(one.name)
        await mongodb_client.drop_database(two.name)
