"""The table of known credential formats: one :class:`KeyFormat` record each, in the order they are tried."""

from __future__ import annotations

from stockade.guardrails.checks.exfiltration.formats_apps import APP_FORMATS
from stockade.guardrails.checks.exfiltration.formats_generic import GENERIC_FORMATS, PAIRED_FORMATS
from stockade.guardrails.checks.exfiltration.formats_infra import INFRA_FORMATS
from stockade.guardrails.checks.exfiltration.key_format import KeyFormat

FORMATS: tuple[KeyFormat, ...] = (*INFRA_FORMATS, *APP_FORMATS, *GENERIC_FORMATS, *PAIRED_FORMATS)
FORMATS_BY_NAME: dict[str, KeyFormat] = {f.name: f for f in FORMATS}
if len(FORMATS_BY_NAME) != len(FORMATS):  # a name is what disabled_rules and findings use: one format each
    raise RuntimeError("two key formats share a name")
