"""Composition root: ``create_app(settings)`` builds the broker app; ``python -m stockade.trust_broker`` runs it
(:func:`stockade.runtime.entrypoint.run_worker`: logging, signals, the metrics listener, uvloop).

Nothing connects at import time. Start order: connect to NATS, read the trust configuration (once: the nonce
bucket's retention and the first registry come from the same read), open the shared nonce bucket and the TRUST
stream, then start consuming ``trust.submit.*`` in the queue group; the registry watcher runs as a background
task. A signal drains the connection (in-flight submissions finish) before exit.

The service is a FastStream app (connection, lifespan, the health and reload subscribers, drain on stop). The
``trust.submit.*`` hot path is a raw nats-py queue subscription on the same connection, verifying up to
``max_workers`` submissions concurrently (:mod:`stockade.trust_broker.dispatch` says why).
"""

from __future__ import annotations

import logging

from nats.aio.msg import Msg

from stockade.contracts import subjects
from stockade.contracts.jetstream import ensure_stream
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.replies import HealthReply
from stockade.contracts.streams import stream_spec_for
from stockade.guardrails.trust import InMemoryNonceStore, JetStreamNonceStore, NonceStore
from stockade.runtime.background import Tasks
from stockade.runtime.bus import NoRequest, command, connect_broker, make_broker, stop_broker
from stockade.runtime.entrypoint import run_worker
from stockade.runtime.shutdown import GRACE_S, ShutdownDeadline
from stockade.runtime.tracing import configure_tracing, consumer_span, inject
from stockade.trust_broker import wire
from stockade.trust_broker.content import build_content_validator
from stockade.trust_broker.dispatch import ConcurrentSubscription
from stockade.trust_broker.metrics import count_decision
from stockade.trust_broker.reloading import EnforcerProvider, TrustFile
from stockade.trust_broker.service import Decision, TrustBrokerService
from stockade.trust_broker.settings import TrustBrokerSettings

log = logging.getLogger(__name__)


class TrustBrokerApp:
    """The running service: a FastStream NatsBroker wired to :class:`TrustBrokerService`."""

    def __init__(self, settings: TrustBrokerSettings) -> None:
        self.settings = settings
        configure_tracing(settings.service_name)  # once per process; exports only when OTEL_* asks
        # The runtime's broker (stockade.runtime.bus: credentials, reconnects, drain budget), with two changes:
        # handlers take the raw message from the context instead of FastDepends injection (injecting a Context
        # parameter runs a sync resolver in a worker thread per message: two thread hops), and no per-message log.
        self.broker = make_broker(settings.nats, name=settings.service_name, apply_types=False, logger=None)
        self.service: TrustBrokerService | None = None
        self.provider: EnforcerProvider | None = None
        self.tasks = Tasks(service=settings.service_name)
        self.submissions = ConcurrentSubscription(
            subjects.TRUST_SUBMIT_WILDCARD,
            settings.queue,
            self._on_submit,
            max_in_flight=settings.max_workers,
        )
        self._register()

    def _register(self) -> None:
        name = self.settings.service_name
        command(
            self.broker,
            subjects.TRUST_HEALTH,
            NoRequest,
            self.on_health,
            queue=f"{name}-health",
            title=f"{name} health",
            unavailable=f"{name} cannot say how it is",
        )
        command(  # no queue group: every replica reloads
            self.broker,
            subjects.TRUST_CMD_RELOAD,
            NoRequest,
            self.on_reload,
            queue=None,
            title=f"{name} reload",
            unavailable=f"{name} could not reload",
        )

    async def on_health(self, _: NoRequest) -> HealthReply:
        return self.health()

    async def on_reload(self, _: NoRequest) -> HealthReply:
        """Rebuild the registry from the file now (every replica): ``reloaded``, or ``error`` and why (the
        previous registry stays)."""
        if self.provider is None:
            return self.health()  # still starting: the first load reads the file anyway
        error = self.provider.reload()
        if error:
            return HealthReply(status="error", error=error)
        return self.health(status="reloaded")

    async def _on_submit(self, msg: Msg) -> None:
        await self.submit(msg.subject, msg.headers, msg.data, msg.reply)

    async def submit(
        self, subject: str, headers: dict[str, str] | None, body: bytes, reply_to: str
    ) -> Decision:
        assert self.service is not None, "start() first"
        # A submission that carries a traceparent is verified in its trace, and the delivered message or the
        # rejection event carries it on; one without pays nothing for tracing.
        with consumer_span("trust.verify", headers) as span:
            decision = await self.service.handle(subject, headers, body)
            count_decision(decision.delivered, decision.rejection.reason if decision.rejection else None)
            # The hot path publishes on the broker's own nats-py connection: same connection, ordering and drain
            # as FastStream's publisher, without its per-call middleware overhead.
            nc = self.broker.connection
            if decision.delivery is not None:
                d = decision.delivery
                await nc.publish(d.subject, d.body, headers=inject(d.headers) if span else d.headers)
            if decision.rejection is not None:
                event = decision.rejection
                event_headers = event.headers()
                await nc.publish(
                    event.subject, event.to_bytes(), headers=inject(event_headers) if span else event_headers
                )
            answer_on = wire.reply_subject(headers, reply_to)
            if answer_on:
                await nc.publish(answer_on, decision.reply.to_bytes())
        return decision

    def health(self, status: str | None = None) -> HealthReply:
        provider = self.provider
        return HealthReply(
            status=status or ("ok" if provider is not None else "starting"),
            service=self.settings.service_name,
            agents=len(provider.current.registry) if provider else 0,
            config_version=provider.version if provider else 0,
        )

    async def start(self) -> None:
        await connect_broker(self.broker, self.settings.nats)  # retries for nats.startup_wait_s
        trust = TrustFile.read(self.settings.config_path)
        nonce_store = await self._nonce_store(trust)
        await self._ensure_stream()
        # Layer D (content re-validation) when configured: its checks load and warm up before consuming.
        validator = await build_content_validator(self.settings.content_validation)
        self.provider = EnforcerProvider(trust, nonce_store, content_validator=validator)
        self.service = TrustBrokerService(self.provider)
        await self.broker.start()
        await self.submissions.start(self.broker.connection)
        await sync_with_server(self.broker.connection)  # consuming from the moment start() returns
        self.tasks.start("registry-watcher", self.provider.watch(self.settings.reload_interval_s))
        log.info("trust-broker consuming %s (queue %s)", subjects.TRUST_SUBMIT_WILDCARD, self.settings.queue)

    async def stop(self) -> None:
        """Each step within what is left of ``shutdown_timeout_s`` (stockade.runtime.shutdown)."""
        stopping = ShutdownDeadline(self.settings.shutdown_timeout_s, service=self.settings.service_name)
        await stopping.step("registry watcher", self.tasks.stop, GRACE_S)
        # no new submissions; the received ones finish
        await stopping.step("submissions", self.submissions.stop)
        # unsubscribes, lets in-flight handlers finish, drains the connection (bounded by nats.drain_timeout_s)
        await stopping.step("NATS bus", stop_broker, self.broker, self.settings.nats.drain_timeout_s)

    async def _nonce_store(self, trust: TrustFile) -> NonceStore:
        if self.settings.nonce_store == "memory":
            return InMemoryNonceStore()
        retention = trust.config.attestation.nonce_retention_s
        js = self.broker.connection.jetstream()
        return await JetStreamNonceStore.open(
            js,
            self.settings.nonce_bucket,
            retention_s=retention,
            client=self.broker.connection,
            max_bytes=self.settings.nonce_bucket_max_bytes,
            replicas=self.settings.nats.stream_replicas,
        )

    async def _ensure_stream(self) -> None:
        """The TRUST stream keeps trust.rejected.v1 (events are durable; Nats-Msg-Id dedupes retries)."""
        js = self.broker.connection.jetstream()
        spec = stream_spec_for(subjects.TRUST_REJECTED).with_limits(
            self.settings.rejected_stream_max_bytes, self.settings.rejected_stream_max_age_s
        )
        await ensure_stream(js, spec, replicas=self.settings.nats.stream_replicas)


def create_app(settings: TrustBrokerSettings) -> TrustBrokerApp:
    return TrustBrokerApp(settings)


def main() -> None:
    run_worker(TrustBrokerSettings, create_app)
