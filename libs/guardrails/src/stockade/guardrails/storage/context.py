"""Correlation of guardrail runs with the platform: link_arms(), link_run_context() and environment variables.

Precedence, lowest first: environment variables, then ``link_arms()`` (process-wide), then
``link_run_context()`` (one run), then the arguments of ``begin_run()``.

| variable | field | meaning |
|---|---|---|
| ``STOCKADE_PROJECT_ID`` | ``project_id`` | platform project the agent belongs to |
| ``STOCKADE_AGENT_ID`` | ``agent_id`` | the agent running the guardrails |
| ``STOCKADE_ENVIRONMENT`` | ``environment`` | prod, staging, dev ... |
| ``STOCKADE_PROMPT_NAME`` / ``STOCKADE_PROMPT_VERSION`` | ``prompt_name`` / ``prompt_version`` | prompt served |
| ``STOCKADE_RUN_ID`` | ``correlation_id`` | the platform's run or job id this process serves |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

ENV_VARS: dict[str, str] = {
    "project_id": "STOCKADE_PROJECT_ID",
    "agent_id": "STOCKADE_AGENT_ID",
    "environment": "STOCKADE_ENVIRONMENT",
    "prompt_name": "STOCKADE_PROMPT_NAME",
    "prompt_version": "STOCKADE_PROMPT_VERSION",
    "correlation_id": "STOCKADE_RUN_ID",
}


@dataclass(frozen=True)
class RunLinks:
    """Platform identifiers attached to a run (all optional)."""

    project_id: str | None = None
    agent_id: str | None = None
    environment: str | None = None
    prompt_name: str | None = None
    prompt_version: str | None = None
    correlation_id: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RunLinks:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {name: env[var] for name, var in ENV_VARS.items() if env.get(var)}
        return cls(**values)

    def merged(self, labels: Mapping[str, Any] | None = None, **values: str | None) -> RunLinks:
        """A copy with the non-None ``values`` replacing ours and ``labels`` added (as strings)."""
        known = {f.name for f in fields(self)} - {"labels"}
        unknown = set(values) - known
        if unknown:
            raise TypeError(f"unknown run link(s): {', '.join(sorted(unknown))}; use labels={{...}}")
        update: dict[str, Any] = {k: str(v) for k, v in values.items() if v is not None}
        if labels:
            update["labels"] = {**self.labels, **{str(k): str(v) for k, v in labels.items()}}
        return replace(self, **update)

    def as_fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
