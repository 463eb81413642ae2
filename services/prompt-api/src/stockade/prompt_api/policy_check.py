"""A guardrail policy is checked before anything is stored (README, "Guardrail policies"): its size, its YAML
(safe loader, no aliases, bounded nesting), the guardrails library's own configuration model
(``stockade.guardrails.GuardrailsConfig``, what agents load it with: one source of truth), and no secrets.

A secret is refused wherever it stands: under a credential-named key, in a secret field of the schema (a
``SecretStr``), or as a value that holds a Stockade key or that the library's own secret scanner (the exfiltration
check's credential formats and credential-in-context rule) flags. The value is never echoed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import yaml
from pydantic import BaseModel, SecretStr, ValidationError

from stockade.guardrails.checks.exfiltration.secrets import SecretScanner
from stockade.guardrails.config import GuardrailsConfig
from stockade.identity import keys
from stockade.prompt_api.errors import InvalidContent, InvalidPolicy, PolicyHasSecret
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.skill_format import FrontMatterLoader

# Keys (lower case, '-' as '_') whose non-empty value is a credential wherever they appear. References to where a
# secret lives (api_key_env, api_key_file, secret_env, secret_file) are not among them.
CREDENTIAL_KEYS = frozenset(
    {
        "access_key",
        "access_token",
        "api_key",
        "api_token",
        "apikey",
        "auth_token",
        "authorization",
        "aws_secret_access_key",
        "bearer_token",
        "client_secret",
        "credential",
        "credentials",
        "ingest_key",
        "passwd",
        "password",
        "private_key",
        "refresh_token",
        "secret",
        "secret_access_key",
        "secret_key",
        "session_token",
        "token",
        "x_api_key",
    }
)
_STOCKADE_KEY = re.compile(rf"{keys.PREFIX}[0-9A-Za-z]{{{keys.KEY_LEN - len(keys.PREFIX)}}}")
_WHERE_SECRETS_LIVE = (
    "a policy may not carry secrets (provider keys, ingest keys, passwords): name where the agent finds it "
    "instead (api_key_env, api_key_file, secret_env, secret_file, the STOCKADE_INGEST_KEY variable)"
)


class PolicyLoader(FrontMatterLoader):
    """The safe loader of SKILL.md front matter (no aliases, bounded nesting), naming the policy."""

    what = "the policy"


def policy_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check_policy(text: str, limits: LimitSettings) -> GuardrailsConfig:
    """The policy as the library reads it; 422 (:class:`InvalidContent` and subclasses) if it may not be stored."""
    size = len(text.encode())
    if size > limits.max_policy_bytes:
        raise InvalidContent(f"the policy is {size} bytes; the limit is {limits.max_policy_bytes}")
    data = _mapping(text)
    for path, key, value in _leaves(data, ()):
        if _is_secret(key, value):
            raise PolicyHasSecret(_dotted(path), _WHERE_SECRETS_LIVE)
    try:
        config = GuardrailsConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidPolicy(_dotted(first["loc"]), first["msg"]) from None
    for path in _secret_fields(config, ()):
        raise PolicyHasSecret(_dotted(path), _WHERE_SECRETS_LIVE)
    return config


def _mapping(text: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=PolicyLoader)  # noqa: S506 - a SafeLoader subclass
    except InvalidContent as exc:
        raise InvalidPolicy("", str(exc)) from None
    except yaml.YAMLError as exc:
        raise InvalidPolicy("", f"the policy is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidPolicy("", "the policy must be a YAML mapping at the top level")
    return data


def _leaves(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str, Any]]:
    """Every (path, key, value) of the document, containers included, depth first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield (*path, key), str(key), value
        yield from _leaves(value, (*path, key))


def _is_secret(key: str, value: Any) -> bool:
    if value is None or value == "" or isinstance(value, bool | dict | list):
        return False
    if key.lower().replace("-", "_") in CREDENTIAL_KEYS:
        return True
    if not isinstance(value, str):
        return False
    if any(keys.key_id_of(found) is not None for found in _STOCKADE_KEY.findall(value)):
        return True
    return bool(_scanner().scan(f"{key}: {value}"))


@cache
def _scanner() -> SecretScanner:
    return SecretScanner(use_detect_secrets=False)


def _secret_fields(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """The paths of the schema's secret fields (``SecretStr``) that the policy sets."""
    if isinstance(node, SecretStr):
        yield path
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from _secret_fields(getattr(node, name), (*path, name))
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _secret_fields(value, (*path, key))
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from _secret_fields(value, (*path, index))


def _dotted(path: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in path)
