"""The OpenAPI document describes the error body the services really send (the house shape, not FastAPI's)."""

from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel

from stockade.runtime.body import documented_body
from stockade.runtime.errors import error_responses, install_error_handlers


class Item(BaseModel):
    name: str


def _app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/items", responses=error_responses({401: "no key"}))
    async def items(limit: int) -> list[str]:
        return []

    @app.post("/items", openapi_extra=documented_body(Item))
    async def add() -> None:
        return None

    return app


def test_422_and_documented_errors_refer_to_the_house_error_body() -> None:
    app = _app()
    spec = app.openapi()
    responses = spec["paths"]["/items"]["get"]["responses"]
    ref = {"$ref": "#/components/schemas/ErrorBody"}
    assert responses["422"]["content"]["application/json"]["schema"] == ref
    assert responses["401"]["content"]["application/json"]["schema"] == ref
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ErrorDetail" in schemas
    body = TestClient(app).get("/items", params={"limit": "x"}).json()
    assert set(body) == {"error"} and body["error"]["code"] == "invalid_request"


def test_a_body_read_by_hand_is_documented_inline() -> None:
    body = _app().openapi()["paths"]["/items"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert body["required"] and schema["required"] == ["name"] and "$defs" not in schema
