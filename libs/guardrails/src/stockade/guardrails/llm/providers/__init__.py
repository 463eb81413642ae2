"""Model providers: one adapter per SDK, chosen by ``ModelConfig.provider``."""

from __future__ import annotations

from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.providers.base import ModelProvider, ModelProviderError, StreamChunk


def build_provider(config: ModelConfig) -> ModelProvider:
    """The adapter for ``config.provider`` (imports only that provider's SDK)."""
    if config.provider in ("openai", "azure_openai"):
        from stockade.guardrails.llm.providers.openai_chat import OpenAIProvider

        return OpenAIProvider(config)
    if config.provider == "anthropic":
        from stockade.guardrails.llm.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(config)
    if config.provider == "gemini":
        from stockade.guardrails.llm.providers.gemini import GeminiProvider

        return GeminiProvider(config)
    from stockade.guardrails.llm.providers.bedrock_converse import BedrockProvider

    return BedrockProvider(config)


__all__ = ["ModelProvider", "ModelProviderError", "StreamChunk", "build_provider"]
