"""One way to handle a bus message (``stockade.runtime.bus.command`` and ``on_event``), on FastStream's in-memory
TestNatsBroker: what an asker gets back for a good request, a malformed one, a domain error and a handler that
breaks; what a follower does with a good and a malformed event. On a real nats-server: every service's
integration tests (model-api, guardrail-ingest, trust-broker)."""

from __future__ import annotations

from faststream.nats import NatsBroker, TestNatsBroker
from pydantic import BaseModel, ConfigDict

from stockade.contracts.replies import ErrorReply, HealthReply
from stockade.runtime.bus import NoRequest, command, declare_health, make_broker, on_event
from stockade.runtime.settings import NatsSettings

SUBJECT = "echo.cmd.upper.v1"


class Upper(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str


class Shout(BaseModel):
    text: str


async def upper(query: Upper) -> Shout | ErrorReply:
    """The rule, with no transport: a domain error is a value too."""
    if not query.text:
        return ErrorReply.of("not_found", "nothing to shout")
    if query.text == "boom":
        raise ConnectionError("the store is down")
    return Shout(text=query.text.upper())


def echo_broker() -> NatsBroker:
    broker = make_broker(NatsSettings(), name="echo")
    command(broker, SUBJECT, Upper, upper, queue="echo", title="echo", unavailable="echo is down")
    return broker


async def ask(broker: NatsBroker, body: bytes, subject: str = SUBJECT) -> bytes:
    return bytes((await broker.request(body, subject, timeout=5)).body)


async def test_a_request_gets_the_handlers_typed_reply() -> None:
    async with TestNatsBroker(echo_broker()) as broker:
        assert Shout.model_validate_json(await ask(broker, b'{"text": "hi"}')).text == "HI"


async def test_a_domain_error_is_answered_as_the_handler_returned_it() -> None:
    async with TestNatsBroker(echo_broker()) as broker:
        reply = ErrorReply.model_validate_json(await ask(broker, b'{"text": ""}'))
    assert (reply.error.code, reply.error.message) == ("not_found", "nothing to shout")


async def test_a_malformed_request_is_refused_without_reaching_the_handler() -> None:
    async with TestNatsBroker(echo_broker()) as broker:
        for body in (b"not json", b'{"text": 3}', b'{"text": "x", "sql": "SELECT 1"}', b""):
            reply = ErrorReply.model_validate_json(await ask(broker, body))
            assert reply.error.code == "invalid_request", body
            assert (
                "text" in reply.error.message or "sql" in reply.error.message or "JSON" in reply.error.message
            )


async def test_a_handler_that_breaks_is_answered_unavailable_not_silence() -> None:
    async with TestNatsBroker(echo_broker()) as broker:
        reply = ErrorReply.model_validate_json(await ask(broker, b'{"text": "boom"}'))
    assert (reply.error.code, reply.error.message) == ("unavailable", "echo is down")


async def test_a_command_that_reads_no_body_answers_whatever_is_sent() -> None:
    broker = make_broker(NatsSettings(), name="echo")

    async def hello(_: NoRequest) -> Shout:
        return Shout(text="hello")

    command(broker, "echo.cmd.hello.v1", NoRequest, hello, queue=None, title="hello", unavailable="down")
    declare_health(broker, "echo.cmd.health.v1", "echo", probe=lambda: {"agents": 3})
    async with TestNatsBroker(broker) as test:
        for body in (b"{}", b"", b"anything"):
            assert Shout.model_validate_json(await ask(test, body, "echo.cmd.hello.v1")).text == "hello"
        health = HealthReply.model_validate_json(await ask(test, b"{}", "echo.cmd.health.v1"))
    assert (health.status, health.service, health.agents) == ("ok", "echo", 3)


async def test_an_event_follower_gets_typed_events_and_drops_malformed_ones() -> None:
    broker = make_broker(NatsSettings(), name="echo")
    heard: list[str] = []

    async def hear(event: Shout) -> None:
        heard.append(event.text)

    on_event(broker, "echo.said.v1", Shout, hear, title="echo follower")
    async with TestNatsBroker(broker) as test:
        await test.publish(b'{"text": "one"}', "echo.said.v1")
        await test.publish(b"{not json", "echo.said.v1")
        await test.publish(b'{"text": "two"}', "echo.said.v1")
    assert heard == ["one", "two"]
