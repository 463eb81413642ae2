"""``POST /classify``: the Hugging Face text-classification shape, as the guardrails toxicity check calls it.

| status | when |
|---|---|
| 401 | ``api_key`` is set and ``Authorization: Bearer <api_key>`` is missing or wrong |
| 413 | body larger than ``limits.max_body_bytes`` |
| 422 | not JSON, not ``{"inputs": str | [str, ...]}``, a text over ``limits.max_chars``, a batch over ``limits.max_batch`` |
| 200 | ``inputs`` a string: ``[{"label", "score"}, ...]``; a list: one such list per text, in order |

Every reply lists all three labels (toxic, offensive, non-toxic), most likely first; their scores sum to 1.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from stockade.runtime.errors import error_response
from stockade.toxicity_classifier.body import BodyTooLargeError, parse_classify_request
from stockade.toxicity_classifier.deps import ModelDep, SettingsDep
from stockade.toxicity_classifier.schemas import LabelScore, request_schema

router = APIRouter(tags=["classification"])


def _authorized(request: Request, settings: SettingsDep) -> bool:
    if settings.api_key is None:
        return True
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    expected = settings.api_key.get_secret_value().encode()
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected)


@router.post(
    "/classify",
    response_model=list[LabelScore] | list[list[LabelScore]],
    openapi_extra=request_schema(),
)
async def classify(request: Request, model: ModelDep, settings: SettingsDep) -> JSONResponse:
    if not _authorized(request, settings):
        unauthorized = error_response(401, "unauthorized", "missing or invalid bearer token")
        unauthorized.headers["WWW-Authenticate"] = "Bearer"
        return unauthorized
    try:
        body = await parse_classify_request(request, settings.limits)
    except BodyTooLargeError as exc:
        return error_response(413, "payload_too_large", str(exc))
    results = await run_in_threadpool(model.classify, body.texts())
    replies = [[{"label": label, "score": score} for label, score in labels] for labels in results]
    return JSONResponse(replies[0] if isinstance(body.inputs, str) else replies)
