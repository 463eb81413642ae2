"""AgentTrustHook: the graph-node form of the trust boundary, for LangGraph (or any state-dict graph).

The node reads a :class:`SignedMessage` (or a mapping with ``envelope`` and ``payload``) from the graph state,
runs :meth:`AgentTrustEnforcer.verify_message`, and writes the :class:`AttestationResult` back. :meth:`route` is
the conditional-edge function: it returns ``"accepted"`` or ``"rejected"``. On rejection the node also clears the
message from the state, so no later node can consume an unverified payload by mistake.

The node itself needs no LangGraph import; :meth:`add_to` wires it into a ``StateGraph``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from stockade.guardrails.trust.enforcer import AgentTrustEnforcer
from stockade.guardrails.trust.envelope import AttestationEnvelope
from stockade.guardrails.trust.result import AttestationResult, Layer, RejectionReason

Route = Literal["accepted", "rejected"]


class SignedMessage(BaseModel):
    """A payload with its attestation envelope, as carried in graph state."""

    model_config = ConfigDict(frozen=True)

    envelope: AttestationEnvelope
    payload: str


class AgentTrustHook:
    """A LangGraph node verifying ``state[message_key]``; writes ``state[result_key]``."""

    def __init__(
        self,
        enforcer: AgentTrustEnforcer,
        *,
        message_key: str = "incoming",
        result_key: str = "trust_result",
        required_capability: str | None = None,
        receiver: str | None = None,
    ) -> None:
        self.enforcer = enforcer
        self.message_key = message_key
        self.result_key = result_key
        self.required_capability = required_capability
        self.receiver = receiver

    async def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
        message = _as_message(state.get(self.message_key))
        if message is None:
            result = AttestationResult.fail(
                Layer.B, RejectionReason.MALFORMED, "no signed message in graph state"
            )
        else:
            result = await self.enforcer.verify_message(
                message.envelope,
                message.payload,
                required_capability=self.required_capability,
                expected_receiver=self.receiver,
            )
        update: dict[str, Any] = {self.result_key: result}
        if not result.passed:
            update[self.message_key] = None
        return update

    def route(self, state: Mapping[str, Any]) -> Route:
        result = state.get(self.result_key)
        return "accepted" if isinstance(result, AttestationResult) and result.passed else "rejected"

    def add_to(self, graph: Any, *, name: str = "agent_trust", on_accepted: str, on_rejected: str) -> None:
        """Add this node to a LangGraph ``StateGraph`` with a conditional edge to the two branches."""
        graph.add_node(name, self)
        graph.add_conditional_edges(name, self.route, {"accepted": on_accepted, "rejected": on_rejected})


def _as_message(value: Any) -> SignedMessage | None:
    if isinstance(value, SignedMessage):
        return value
    if isinstance(value, Mapping):
        try:
            return SignedMessage.model_validate(value)
        except ValueError:
            return None
    return None
