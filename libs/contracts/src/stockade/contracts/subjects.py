"""Every NATS subject and JetStream stream of Stockade, named here and nowhere else.

Rules (checked by tests): events are past tense and versioned, ``<domain>.<fact>.v<N>``; commands
(request/reply) carry ``.cmd.``, ``<domain>.cmd.<verb>.v<N>``. A subject carries an id only where NATS
permissions must tell its readers apart: agent traffic (senders publish to ``trust.submit.<receiver>``, only the
trust-broker may publish to ``agent.<receiver>.inbox``) and the one event agents receive about tenants' content,
``prompt.published.v1.<project id>`` and ``policy.published.v1.<project id>`` (an agent is granted the projects it
works for, never every tenant's).
"""

from __future__ import annotations

import re
from typing import Final

# --- events ------------------------------------------------------------------------------------------------
PROMPT_PUBLISHED: Final = "prompt.published.v1"
SKILL_PUBLISHED: Final = "skill.published.v1"
POLICY_PUBLISHED: Final = "policy.published.v1"
MODEL_CHANGED: Final = "model.changed.v1"
APIKEY_REVOKED: Final = "apikey.revoked.v1"
DBCONFIG_ACTIVATED: Final = "dbconfig.activated.v1"
GUARDRAIL_EVENTS: Final = "guardrail.events.v1"
GUARDRAIL_DEAD_LETTERED: Final = "guardrail.dead_lettered.v1"
TRUST_REJECTED: Final = "trust.rejected.v1"

EVENTS: Final[tuple[str, ...]] = (
    PROMPT_PUBLISHED,
    SKILL_PUBLISHED,
    POLICY_PUBLISHED,
    MODEL_CHANGED,
    APIKEY_REVOKED,
    DBCONFIG_ACTIVATED,
    GUARDRAIL_EVENTS,
    GUARDRAIL_DEAD_LETTERED,
    TRUST_REJECTED,
)

PROMPT_PUBLISHED_WILDCARD: Final = "prompt.published.v1.*"
"""Where prompt-api publishes :data:`PROMPT_PUBLISHED`: one subject per project (:func:`prompt_published`)."""

_PROJECT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def prompt_published(project_id: str) -> str:
    """The subject of a prompt.published.v1 event of ``project_id``: agents subscribe to their projects' only."""
    if not _PROJECT_ID.fullmatch(project_id):
        raise ValueError(f"project id {project_id!r} cannot be a subject token")
    return f"{PROMPT_PUBLISHED}.{project_id}"


POLICY_PUBLISHED_WILDCARD: Final = "policy.published.v1.*"
"""Where prompt-api publishes :data:`POLICY_PUBLISHED` (a guardrail policy version became active): one subject
per project (:func:`policy_published`)."""


def policy_published(project_id: str) -> str:
    """The subject of a policy.published.v1 event of ``project_id``: agents subscribe to their projects' only."""
    if not _PROJECT_ID.fullmatch(project_id):
        raise ValueError(f"project id {project_id!r} cannot be a subject token")
    return f"{POLICY_PUBLISHED}.{project_id}"


# --- commands (request/reply) ------------------------------------------------------------------------------
MODEL_CMD_GET: Final = "model.cmd.get.v1"
DBCONFIG_CMD_ACTIVE: Final = "dbconfig.cmd.active.v1"
APIKEY_CMD_VERIFY_INGEST: Final = "apikey.cmd.verify_ingest.v1"
"""guardrail-ingest asks the key owner (model-api) whether an ingest key is valid and for which project."""
PROMPT_HEALTH: Final = "prompt.cmd.health.v1"
MODEL_HEALTH: Final = "model.cmd.health.v1"
GUARDRAIL_HEALTH: Final = "guardrail.cmd.health.v1"
TRUST_HEALTH: Final = "trust.cmd.health.v1"
TRUST_CMD_RELOAD: Final = "trust.cmd.reload.v1"
GUARDRAIL_CMD_READ_RUNS: Final = "guardrail.cmd.read_runs.v2"
"""model-api's console reads the run store, which guardrail-ingest owns: one typed command with the caller's project
scope (:mod:`stockade.contracts.run_store`), never a query text (v1 carried SQL and is gone)."""

COMMANDS: Final[tuple[str, ...]] = (
    MODEL_CMD_GET,
    DBCONFIG_CMD_ACTIVE,
    APIKEY_CMD_VERIFY_INGEST,
    PROMPT_HEALTH,
    MODEL_HEALTH,
    GUARDRAIL_HEALTH,
    TRUST_HEALTH,
    TRUST_CMD_RELOAD,
    GUARDRAIL_CMD_READ_RUNS,
)

HEALTH_BY_SERVICE: Final[dict[str, str]] = {
    "prompt-api": PROMPT_HEALTH,
    "model-api": MODEL_HEALTH,
    "guardrail-ingest": GUARDRAIL_HEALTH,
    "trust-broker": TRUST_HEALTH,
}

# --- agent traffic (subjects carrying an agent id) ---------------------------------------------------------
TRUST_SUBMIT_PREFIX: Final = "trust.submit"
TRUST_SUBMIT_WILDCARD: Final = "trust.submit.*"
AGENT_INBOX_WILDCARD: Final = "agent.*.inbox"
AGENT_REPLY_WILDCARD: Final = "agent.*.reply.*"
"""The trust-broker's answers to submissions: ``agent.<sender>.reply.<token>``, exported to AGENTS like the inbox."""
TRUST_BROKER_QUEUE: Final = "trust-broker"

_AGENT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _check_agent_id(agent_id: str) -> str:
    if not _AGENT_ID.fullmatch(agent_id):
        raise ValueError(
            f"invalid agent id {agent_id!r}: use 1-64 letters, digits, '_' or '-' (no dots or wildcards)"
        )
    return agent_id


def trust_submit(receiver: str) -> str:
    """Subject a sender publishes an attested envelope to, for ``receiver``."""
    return f"{TRUST_SUBMIT_PREFIX}.{_check_agent_id(receiver)}"


def agent_inbox(receiver: str) -> str:
    """Subject only the trust-broker may publish to; ``receiver`` alone may subscribe."""
    return f"agent.{_check_agent_id(receiver)}.inbox"


def agent_reply(agent_id: str, token: str) -> str:
    """Where the trust-broker answers a submission of ``agent_id``: the sender is the NATS user the server
    authenticated (never a subject the sender names), ``token`` the sender's own correlation token."""
    return f"agent.{_check_agent_id(agent_id)}.reply.{_check_agent_id(token)}"


def agent_replies(agent_id: str) -> str:
    """The one subscription an agent holds for the trust-broker's answers to its submissions."""
    return f"agent.{_check_agent_id(agent_id)}.reply.*"


def is_agent_id(value: str) -> bool:
    """Whether ``value`` is a valid agent id (also the shape of a reply token)."""
    return _AGENT_ID.fullmatch(value) is not None


def rate_limit_bucket(agent_id: str) -> str:
    """The agent's own rate-limit bucket (``guardrail_rate_limits_<id>``): deploy/nats lets only that agent read,
    write or create it, and the AGENTS account caps each bucket's bytes, so no agent can read, reset, fill or
    pre-create another's counters."""
    return f"{KV_RATE_LIMITS}_{_check_agent_id(agent_id)}"


def agent_reply_prefix(agent_id: str) -> str:
    """Inbox prefix of an agent's own requests (nats-py ``inbox_prefix``): replies land on ``<prefix>.>``,
    the one reply subject space deploy/nats lets that agent read."""
    return f"_INBOX_{_check_agent_id(agent_id)}"


def user_reply_prefix(user: str) -> str:
    """Inbox prefix of a NATS user's own requests, a service's (``_INBOX_model-api``) as an agent's: deploy/nats
    and ``stockade up`` let each user subscribe to ``<prefix>.>`` only, so no service reads another's replies
    (finding N13)."""
    return agent_reply_prefix(user)


def receiver_of_submit(subject: str) -> str:
    """Inverse of :func:`trust_submit`; raises ValueError for any other subject."""
    prefix = TRUST_SUBMIT_PREFIX + "."
    if not subject.startswith(prefix):
        raise ValueError(f"not a trust.submit subject: {subject!r}")
    return _check_agent_id(subject[len(prefix) :])


# --- JetStream streams: durable, one per domain ------------------------------------------------------------
STREAMS: Final[dict[str, tuple[str, ...]]] = {
    "PROMPTS": (PROMPT_PUBLISHED_WILDCARD, SKILL_PUBLISHED, POLICY_PUBLISHED_WILDCARD),
    "MODELS": (MODEL_CHANGED, DBCONFIG_ACTIVATED),
    "IDENTITY": (APIKEY_REVOKED,),
    "GUARDRAIL_EVENTS": (GUARDRAIL_EVENTS,),
    "GUARDRAIL_DEAD_LETTERS": (GUARDRAIL_DEAD_LETTERED,),
    "TRUST": (TRUST_REJECTED,),
}

# --- JetStream key-value buckets ---------------------------------------------------------------------------
KV_TRUST_NONCES: Final = "trust_nonces"
KV_RATE_LIMITS: Final = "guardrail_rate_limits"
"""The guardrails rate limiter's counters (the library's default bucket). An agent keeps its counters in its own
bucket, :func:`rate_limit_bucket` (the only one deploy/nats grants it)."""

EVENT_PATTERN: Final = re.compile(r"^[a-z][a-z_]*(\.[a-z][a-z_]*)+\.v[0-9]+$")
COMMAND_PATTERN: Final = re.compile(r"^[a-z][a-z_]*\.cmd\.[a-z][a-z_]*\.v[0-9]+$")


def stream_for(subject: str) -> str:
    """Name of the stream that stores ``subject`` (an event's name, or the subject it is published on)."""
    if subject == PROMPT_PUBLISHED or subject.startswith(PROMPT_PUBLISHED + "."):
        subject = PROMPT_PUBLISHED_WILDCARD
    if subject == POLICY_PUBLISHED or subject.startswith(POLICY_PUBLISHED + "."):
        subject = POLICY_PUBLISHED_WILDCARD
    for stream, subjects in STREAMS.items():
        if subject in subjects:
            return stream
    raise KeyError(f"no stream stores {subject!r}")
