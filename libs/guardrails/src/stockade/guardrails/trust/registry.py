"""AgentRegistry (spec 2, layer A): agent identity, standing trust level and capability allow-list."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from stockade.guardrails.trust.config import AGENT_ID_PATTERN, TrustConfig
from stockade.guardrails.trust.levels import TrustLevel
from stockade.guardrails.trust.loading import trust_config_from_path, trust_config_from_yaml


class AgentIdentity(BaseModel):
    """One registry entry."""

    model_config = ConfigDict(frozen=True)

    agent_id: str = Field(pattern=AGENT_ID_PATTERN, description="Agent identity.")
    trust_level: TrustLevel = Field(default=TrustLevel.UNTRUSTED, description="Standing trust level.")
    capabilities: frozenset[str] = Field(default_factory=frozenset, description="Capability allow-list.")
    require_capability: bool | None = Field(
        default=None,
        description="As a receiver: messages to this agent must name a capability. None: when it holds a "
        "privileged capability.",
    )
    project: str | None = Field(default=None, description="The project this agent works for (audit trail).")

    def allows(self, capability: str) -> bool:
        return capability in self.capabilities


class AgentRegistry:
    """Lookup of agents by id. Build it in code, from a :class:`TrustConfig`, or from YAML."""

    def __init__(self, agents: Iterable[AgentIdentity] = ()) -> None:
        self._agents: dict[str, AgentIdentity] = {}
        for agent in agents:
            self.register(agent)

    def register(self, agent: AgentIdentity) -> None:
        if agent.agent_id in self._agents:
            raise ValueError(f"agent {agent.agent_id!r} is already registered")
        self._agents[agent.agent_id] = agent

    def get(self, agent_id: str) -> AgentIdentity | None:
        return self._agents.get(agent_id)

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._agents

    def __iter__(self) -> Iterator[AgentIdentity]:
        return iter(self._agents.values())

    def __len__(self) -> int:
        return len(self._agents)

    @classmethod
    def from_config(cls, config: TrustConfig) -> AgentRegistry:
        return cls(
            AgentIdentity(
                agent_id=a.id,
                trust_level=a.trust,
                capabilities=a.capabilities,
                require_capability=a.require_capability,
                project=a.project,
            )
            for a in config.agents
        )

    @classmethod
    def from_yaml(cls, text: str) -> AgentRegistry:
        """From YAML: a full guardrails configuration, or just the ``trust:`` section's content."""
        return cls.from_config(trust_config_from_yaml(text))

    @classmethod
    def from_path(cls, path: str | Path) -> AgentRegistry:
        return cls.from_config(trust_config_from_path(path))
