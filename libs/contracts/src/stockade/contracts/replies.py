"""Bodies of the bus's request/reply answers that are not events: health, errors, the model catalogue look-up
(``model.cmd.get.v1``) and the trust-broker's answer to a submission (``trust.submit.<receiver>``).

Both ends use these models: the service builds its answer with one and sends ``to_bytes()``; the asker reads it
with ``model_validate_json``. Like the events they ignore unknown fields, so an answer may gain fields within a
version. ``libs/contracts/asyncapi.json`` documents them (:mod:`.asyncapi`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True, serialize_by_alias=True)

    def to_bytes(self) -> bytes:
        """The JSON body to send: aliases as on the wire; a field not given is left out (one model's reply has no
        ``providers``), one given as None is sent as null."""
        return self.model_dump_json(exclude_unset=True).encode()

    def as_json(self) -> dict[str, Any]:
        """The same body as a JSON-ready dict (for a FastStream handler, which encodes what it returns)."""
        return self.model_dump(mode="json", exclude_unset=True)


class ErrorDetail(_Reply):
    code: str = Field(description="invalid_request, not_found or unavailable.")
    message: str


class ErrorReply(_Reply):
    """An error answer instead of a command's reply: ``{"error": {"code", "message"}}``. ``unavailable`` means
    the service could not decide (its database is down): the asker fails closed or retries."""

    error: ErrorDetail

    @classmethod
    def of(cls, code: str, message: str) -> ErrorReply:
        return cls(error=ErrorDetail(code=code, message=message))

    @classmethod
    def parse(cls, body: bytes) -> ErrorReply | None:
        """The error in ``body``, or None when ``body`` is not an error answer."""
        try:
            return cls.model_validate_json(body)
        except ValueError:
            return None


class HealthReply(_Reply):
    """Answer of every ``<service>.cmd.health.v1`` (and the trust-broker's ``trust.cmd.reload.v1``): ``status`` is
    ``ok`` when the service serves (``starting`` before, ``reloaded`` / ``error`` for a reload); services may add
    fields, kept on the model (``extra="allow"``)."""

    model_config = ConfigDict(extra="allow", frozen=True, serialize_by_alias=True)

    status: str
    service: str | None = None
    agents: int | None = Field(default=None, description="trust-broker: agents in its registry.")
    config_version: int | None = Field(default=None, description="trust-broker: registry reloads so far.")
    error: str | None = Field(
        default=None, description="trust-broker reload: why the new registry was refused."
    )


class ModelGetQuery(_Reply):
    """Request of ``model.cmd.get.v1``: one model (``provider`` and ``model_id``) or a provider's models (or all
    of them), of the active database configuration or the one ``db_config_id`` names."""

    provider: str | None = None
    model_id: str | None = Field(default=None, description="Needs a provider.")
    db_config_id: str | None = Field(default=None, description="Default: the active configuration.")


class PricePoint(_Reply):
    """A model's prices from ``effectiveAt`` on (per million tokens; numbers whose text is the exact decimal)."""

    effective_at: str = Field(alias="effectiveAt", description="ISO 8601, UTC.")
    input_price_per_m_token: float | int | None = Field(alias="inputPricePerMToken")
    output_price_per_m_token: float | int | None = Field(alias="outputPricePerMToken")


class ProviderModels(_Reply):
    provider: str
    models: list[dict[str, Any]] = Field(
        description="Model records as the console's API shows them (spec 4.2)."
    )


class ModelGetReply(_Reply):
    """Reply of ``model.cmd.get.v1``: the configuration asked about, with one model and its price history, or
    the list of providers and their models."""

    db_config: dict[str, Any] = Field(alias="dbConfig", description="The database configuration's record.")
    provider: str | None = Field(default=None, description="One model: its provider (normalised).")
    model: dict[str, Any] | None = Field(default=None, description="One model: its record (spec 4.2).")
    price_history: list[PricePoint] | None = Field(
        default=None, alias="priceHistory", description="One model: its effective-dated prices, oldest first."
    )
    providers: list[ProviderModels] | None = Field(
        default=None, description="A list: the models by provider."
    )


class SubmitReply(_Reply):
    """The trust-broker's answer on a submission's reply subject, when the sender gave one."""

    status: Literal["delivered", "rejected"]
    receiver: str
    nonce: str | None = Field(default=None, description="delivered: the envelope's nonce.")
    reason: str | None = Field(default=None, description="rejected: bad_signature, replay, malformed, ...")
    layer: str | None = Field(default=None, description="rejected: the trust layer (A-D) that refused it.")
    error: str | None = Field(default=None, description="rejected: details, when there are any.")
