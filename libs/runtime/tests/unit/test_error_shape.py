import httpx
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

from stockade.runtime.errors import install_error_handlers


class Body(BaseModel):
    name: str
    size: int


def make_app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.post("/things")
    async def create(body: Body) -> dict[str, str]:
        return {"name": body.name}

    @app.get("/forbidden")
    async def forbidden() -> None:
        raise HTTPException(403, "key has read scope")

    @app.get("/crash")
    async def crash() -> None:
        raise RuntimeError("secret internal detail")

    return app


async def request(method: str, path: str, **kw):
    transport = httpx.ASGITransport(app=make_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        return await c.request(method, path, **kw)


async def test_validation_errors_are_422_in_house_shape_naming_the_field():
    r = await request("POST", "/things", json={"name": "x", "size": "big"})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "invalid_request" and "size" in err["message"]


async def test_malformed_json_is_422_not_500():
    r = await request("POST", "/things", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"


async def test_http_errors_keep_status_and_message():
    r = await request("GET", "/forbidden")
    assert r.status_code == 403 and r.json() == {
        "error": {"code": "forbidden", "message": "key has read scope"}
    }
    r = await request("GET", "/nope")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


async def test_unhandled_errors_do_not_leak_details():
    r = await request("GET", "/crash")
    assert r.status_code == 500
    assert r.json() == {"error": {"code": "internal", "message": "internal error"}}
