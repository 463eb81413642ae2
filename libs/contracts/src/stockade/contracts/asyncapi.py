"""The AsyncAPI 3.0 document of Stockade's bus, generated from this package: every subject of :mod:`.subjects`, its
payload (JSON Schema of the pydantic model in :mod:`.envelope`), headers (:mod:`.headers`, :mod:`.agent_wire`) and,
for an event, the stream that keeps it (:mod:`.streams`).

Generated from the contracts, not from FastStream's generator: every service's handlers are FastStream subscribers,
but the trust-broker's submission path is a plain nats-py subscription, and the events the guardrails library and
the agents publish have no handler declaring them anywhere, so a document built from handlers would miss subjects
(docs/decisions.md, FastStream versus nats-py). Every request and reply
body is a model of :mod:`.envelope` or :mod:`.replies` (which both ends use), except the requests whose body is
ignored and the agents' payload bytes.

    python -m stockade.contracts.asyncapi libs/contracts/asyncapi.json    # rewrite the committed copy
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

from pydantic import BaseModel

from stockade.contracts import agent_wire, envelope, headers, run_store, subjects
from stockade.contracts.replies import ErrorReply, HealthReply, ModelGetQuery, ModelGetReply, SubmitReply
from stockade.contracts.streams import STREAM_SPECS

_OBJECT: Final = {"type": "object"}
_BYTES: Final = {"description": "The agent's payload bytes, unchanged (any content type)."}


def _header_schema(required: dict[str, str], optional: dict[str, str] | None = None) -> dict[str, Any]:
    props = {
        name: {"type": "string", "description": text}
        for name, text in {**required, **(optional or {})}.items()
    }
    return {"type": "object", "properties": props, "required": sorted(required)}


_TRACE: Final = {headers.TRACEPARENT: "W3C trace context.", headers.TRACESTATE: "W3C trace state."}
_EVENT_HEADERS: Final = _header_schema(
    {
        headers.MSG_ID: "The event_id: JetStream stores it once.",
        headers.SCHEMA_VERSION: "The schema_version.",
    },
    _TRACE,
)
_SUBMIT_HEADERS: Final = _header_schema(
    {agent_wire.ATTESTATION: "The AttestationEnvelope's JSON (stockade.guardrails.trust)."},
    {
        agent_wire.REPLY_TOKEN: "The sender's token: the broker answers on agent.<sender>.reply.<token>, the "
        "sender being the NATS user the server names in Nats-Request-Info.",
        **_TRACE,
    },
)
_ADDRESSES: Final = {
    subjects.PROMPT_PUBLISHED: (
        f"{subjects.PROMPT_PUBLISHED}.{{project_id}}",
        {"project_id": {"description": "The prompt's project: agents are granted their projects' only."}},
    ),
    subjects.POLICY_PUBLISHED: (
        f"{subjects.POLICY_PUBLISHED}.{{project_id}}",
        {"project_id": {"description": "The policy's project: agents are granted their projects' only."}},
    ),
}
"""Events published on a subject narrower than their name (EventEnvelope.address)."""
_INBOX_HEADERS: Final = _header_schema(
    {
        agent_wire.SENDER: "Verified sender agent id.",
        agent_wire.SENDER_TRUST: "The sender's trust level.",
        agent_wire.NONCE: "The envelope's nonce.",
        agent_wire.KEY_ID: "The key that signed it.",
    },
    {agent_wire.CAPABILITY: "The capability used, when one was.", **_TRACE},
)

_REQUESTS: Final[dict[str, tuple[type[BaseModel] | dict[str, Any], type[BaseModel] | dict[str, Any]]]] = {
    subjects.MODEL_CMD_GET: (ModelGetQuery, ModelGetReply),
    subjects.DBCONFIG_CMD_ACTIVE: ({**_OBJECT, "description": "Ignored: send {}."}, envelope.ActiveDbConfig),
    subjects.APIKEY_CMD_VERIFY_INGEST: (envelope.IngestKeyQuery, envelope.IngestKeyVerdict),
    subjects.TRUST_CMD_RELOAD: ({**_OBJECT, "description": "Ignored."}, HealthReply),
    subjects.GUARDRAIL_CMD_READ_RUNS: (run_store.RunStoreRequest, run_store.RunStoreReply),
    **{
        subject: ({**_OBJECT, "description": "Ignored."}, HealthReply)
        for subject in subjects.HEALTH_BY_SERVICE.values()
    },
}
"""Request and reply body of every command."""


def _channel_id(subject: str) -> str:
    return subject.replace(".", "_").replace("*", "any").replace("{", "").replace("}", "")


def _title(name: str) -> str:
    return name[:1].upper() + name[1:]


class _Builder:
    def __init__(self) -> None:
        self.channels: dict[str, Any] = {}
        self.operations: dict[str, Any] = {}
        self.messages: dict[str, Any] = {}
        self.schemas: dict[str, Any] = {}

    def schema(self, body: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
        if isinstance(body, dict):
            return body
        schema = body.model_json_schema(ref_template="#/components/schemas/{model}")
        self.schemas.update(schema.pop("$defs", {}))
        self.schemas[body.__name__] = schema
        return {"$ref": f"#/components/schemas/{body.__name__}"}

    def message(
        self,
        name: str,
        body: type[BaseModel] | dict[str, Any],
        head: dict[str, Any] | None,
        json_body: bool = True,
    ) -> dict[str, str]:
        message: dict[str, Any] = {
            "name": name,
            "contentType": "application/json" if json_body else "application/octet-stream",
            "payload": self.schema(body),
        }
        if head is not None:
            message["headers"] = head
        self.messages[name] = message
        return {"$ref": f"#/components/messages/{name}"}

    def channel(self, address: str, message: str, ref: dict[str, str], **extra: Any) -> str:
        cid = _channel_id(address)
        self.channels[cid] = {"address": address, "messages": {message: ref}, **extra}
        return cid

    def operation(
        self, cid: str, message: str, action: str, summary: str, replies: tuple[str, ...] = ()
    ) -> None:
        operation: dict[str, Any] = {
            "action": action,
            "summary": summary,
            "channel": {"$ref": f"#/channels/{cid}"},
            "messages": [{"$ref": f"#/channels/{cid}/messages/{message}"}],
        }
        if replies:
            reply_cid = f"{cid}_reply"
            self.channels[reply_cid] = {
                "address": None,
                "description": "The requester's reply inbox (_INBOX.>, or _INBOX_<agent id>.> for an agent).",
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in replies},
            }
            operation["reply"] = {
                "channel": {"$ref": f"#/channels/{reply_cid}"},
                "messages": [{"$ref": f"#/channels/{reply_cid}/messages/{name}"} for name in replies],
            }
        self.operations[cid] = operation


def _events(b: _Builder) -> None:
    models = {
        cls.subject: cls
        for cls in vars(envelope).values()
        if isinstance(cls, type) and issubclass(cls, envelope.EventEnvelope) and cls.subject
    }
    for subject in subjects.EVENTS:
        model = models[subject]
        spec = STREAM_SPECS[subjects.stream_for(subject)]
        stream = {"name": spec.name, "retention": spec.retention, "discard": spec.limits.discard}
        address, parameters = _ADDRESSES.get(subject, (subject, None))
        extra: dict[str, Any] = {"x-stockade-stream": stream}
        if parameters:
            extra["parameters"] = parameters
        cid = b.channel(address, model.__name__, b.message(model.__name__, model, _EVENT_HEADERS), **extra)
        b.operation(cid, model.__name__, "send", f"A service publishes {subject} into stream {spec.name}.")


def _commands(b: _Builder) -> None:
    for subject in subjects.COMMANDS:
        request, reply = _REQUESTS[subject]
        name = _title(_channel_id(subject).title().replace("_", ""))
        b.message(f"{name}Reply", reply, None)
        b.message(f"{name}Error", ErrorReply, None)
        cid = b.channel(
            subject, f"{name}Request", b.message(f"{name}Request", request, _header_schema({}, _TRACE))
        )
        replies = (f"{name}Reply", f"{name}Error")
        b.operation(cid, f"{name}Request", "receive", f"A service answers {subject}.", replies)


def _agent_traffic(b: _Builder) -> None:
    receiver = {"receiver": {"description": "The receiving agent's id (1-64 of A-Z a-z 0-9 _ -)."}}
    submit = b.message("AgentSubmission", _BYTES, _SUBMIT_HEADERS, json_body=False)
    b.message("AgentSubmissionReply", SubmitReply, None)
    cid = b.channel(
        f"{subjects.TRUST_SUBMIT_PREFIX}.{{receiver}}", "AgentSubmission", submit, parameters=receiver
    )
    b.operation(cid, "AgentSubmission", "receive", "The trust-broker verifies an attested message.")
    sender = {
        "sender": {"description": "The submitting agent: the NATS user the server authenticated."},
        "token": {"description": "The sender's Stockade-Reply-Token."},
    }
    reply = {"$ref": "#/components/messages/AgentSubmissionReply"}
    cid = b.channel("agent.{sender}.reply.{token}", "AgentSubmissionReply", reply, parameters=sender)
    b.operation(
        cid,
        "AgentSubmissionReply",
        "send",
        "The trust-broker's answer (delivered or rejected), never on a subject the sender names.",
    )
    inbox = b.message("AgentDelivery", _BYTES, _INBOX_HEADERS, json_body=False)
    cid = b.channel("agent.{receiver}.inbox", "AgentDelivery", inbox, parameters=receiver)
    b.operation(
        cid, "AgentDelivery", "send", "Only the trust-broker delivers a verified message to the receiver."
    )


def document() -> dict[str, Any]:
    """The AsyncAPI 3.0 document, as a JSON-ready dict."""
    b = _Builder()
    _events(b)
    _commands(b)
    _agent_traffic(b)
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Stockade bus",
            "version": "1",
            "description": "Every NATS subject of Stockade. Generated by stockade.contracts.asyncapi: do not edit.",
        },
        "defaultContentType": "application/json",
        "servers": {"nats": {"host": "nats:4222", "protocol": "nats"}},
        "channels": b.channels,
        "operations": b.operations,
        "components": {"messages": b.messages, "schemas": dict(sorted(b.schemas.items()))},
    }


def render() -> str:
    return json.dumps(document(), indent=2) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv:
        with open(argv[0], "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
