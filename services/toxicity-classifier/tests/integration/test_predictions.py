"""The shipped model on clear examples written for these tests (no tweet from the data set), over HTTP."""

from __future__ import annotations

import httpx
import pytest

CLEAR = {
    "Thanks for the help with my tax forms, have a lovely weekend": "non-toxic",
    "The meeting moved to 3pm, see you in room B": "non-toxic",
    "you are a worthless piece of shit": "offensive",
    "those people are subhuman animals, kill them all": "toxic",
}


@pytest.mark.parametrize(("text", "label"), CLEAR.items())
async def test_clear_examples_get_their_label_first(service_url, text, label):
    async with httpx.AsyncClient(base_url=service_url) as client:
        reply = (await client.post("/classify", json={"inputs": text})).json()
    assert reply[0]["label"] == label, reply
    assert reply[0]["score"] > 0.5, reply
