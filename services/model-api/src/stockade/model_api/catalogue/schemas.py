"""Request and response models of model-api (spec 2 "Model record"); table models never leave the service."""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from stockade.model_api.catalogue.prices import parse_price, price_json
from stockade.model_api.catalogue.vocabulary import CURRENCY, Capability, DbType, ModelType
from stockade.runtime.storable import StorableStr

PROVIDER_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
# Control characters, and lone surrogates (not UTF-8: no database or response can carry them).
_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")

Price = Annotated[Decimal | None, BeforeValidator(parse_price)]
MIN_CONTEXT_WINDOW = {ModelType.CHAT: 1024, ModelType.COMPLETION: 1024}
"""Every agent's call to a model is refused when it exceeds the catalogue's context window, so a window below
this floor (tokens; 128 for other model types) would silently block nearly every call (docs/permissions.md)."""
MIN_OTHER_CONTEXT_WINDOW = 128


def normalise_provider(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be a string")
    folded = value.strip().lower()
    if not PROVIDER_PATTERN.fullmatch(folded):
        raise ValueError("1-64 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit")
    return folded


def check_model_id(value: str) -> str:
    if not value or value != value.strip() or len(value) > 200 or _CONTROL.search(value):
        raise ValueError("1-200 characters, no control characters and no spaces at either end")
    return value


Provider = Annotated[str, BeforeValidator(normalise_provider)]


class ModelIn(BaseModel):
    """The ``model`` object of a create-or-update body. Field names are the spec's."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, str_strip_whitespace=False)

    id: str | None = Field(default=None, min_length=1, max_length=200, description="Entry label.")
    model_id: Annotated[str, Field(strict=True)] = Field(description="Model identifier; part of the key.")
    display_name: str = Field(alias="displayName", min_length=1, max_length=200)
    model_type: ModelType = Field(alias="modelType")
    context_window: Annotated[int, Field(strict=True, ge=1, le=100_000_000)] | None = Field(
        default=None, alias="contextWindow"
    )
    input_price: Price = Field(default=None, alias="inputPricePerMToken")
    output_price: Price = Field(default=None, alias="outputPricePerMToken")
    capabilities: list[Capability] = Field(default_factory=list, max_length=len(Capability))

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        return check_model_id(value)

    @field_validator("context_window")
    @classmethod
    def _sane_window(cls, value: int | None, info: ValidationInfo) -> int | None:
        kind = info.data.get("model_type")
        floor = MIN_CONTEXT_WINDOW.get(kind, MIN_OTHER_CONTEXT_WINDOW) if kind else MIN_OTHER_CONTEXT_WINDOW
        if value is not None and value < floor:
            raise ValueError(
                f"at least {floor:,} tokens for a {kind.value if kind else 'model'} model (a smaller window "
                "would block nearly every agent call), or null when unknown"
            )
        return value

    @field_validator("display_name", "id")
    @classmethod
    def _trimmed(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value or _CONTROL.search(value):
            raise ValueError("must not be empty or contain control characters")
        return value

    @field_validator("capabilities")
    @classmethod
    def _distinct(cls, value: list[Capability]) -> list[Capability]:
        if len(set(value)) != len(value):
            raise ValueError("capabilities must be distinct")
        return sorted(value, key=lambda c: c.value)


class ModelUpsert(BaseModel):
    """Body of POST /api/platform/models: ``{"provider": ..., "model": {...}}``."""

    model_config = ConfigDict(extra="forbid")

    provider: Provider
    model: ModelIn
    # An addition to the spec's body: when the prices in ``model`` take effect (default: now). Earlier prices
    # stay in the history; a run's cost uses the one in force when each call was made.
    effective_at: AwareDatetime | None = Field(default=None, alias="effectiveAt")


class DbConfigPublic(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    db_type: DbType
    description: str | None
    is_active: bool
    created_at: datetime
    activated_at: datetime | None

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "dbType": self.db_type.value,
            "description": self.description,
            "active": self.is_active,
            "createdAt": self.created_at.isoformat(),
            "activatedAt": self.activated_at.isoformat() if self.activated_at else None,
        }


class DbConfigCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    db_type: DbType
    description: StorableStr | None = Field(default=None, max_length=500)
    activate: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not value or _CONTROL.search(value):
            raise ValueError("must not be empty or contain control characters")
        return value


class ModelPublic(BaseModel):
    """One catalogue entry as it leaves the service."""

    model_config = ConfigDict(frozen=True)

    db_config_id: str
    provider: str
    entry_id: str
    model_id: str
    display_name: str
    model_type: str
    context_window: int | None
    input_price: Decimal | None
    output_price: Decimal | None
    capabilities: list[str]
    created_at: datetime
    updated_at: datetime

    def record(self) -> dict[str, Any]:
        """The spec's model object, every field present, plus currency and timestamps."""
        return {
            "id": self.entry_id,
            "model_id": self.model_id,
            "displayName": self.display_name,
            "modelType": self.model_type,
            "contextWindow": self.context_window,
            "inputPricePerMToken": price_json(self.input_price),
            "outputPricePerMToken": price_json(self.output_price),
            "capabilities": list(self.capabilities),
            "currency": CURRENCY,
            "createdAt": self.created_at.isoformat(),
            "updatedAt": self.updated_at.isoformat(),
        }
