"""The documented value lists: model types, capabilities, database kinds, and the price currency."""

from __future__ import annotations

from enum import StrEnum

CURRENCY = "USD"


class ModelType(StrEnum):
    CHAT = "chat"
    COMPLETION = "completion"
    EMBEDDING = "embedding"
    IMAGE = "image"
    AUDIO = "audio"
    RERANK = "rerank"
    MODERATION = "moderation"


class Capability(StrEnum):
    TEXT = "text"
    VISION = "vision"
    AUDIO = "audio"
    TOOLS = "tools"
    JSON_MODE = "json_mode"
    STRUCTURED_OUTPUT = "structured_output"
    STREAMING = "streaming"
    REASONING = "reasoning"
    EMBEDDINGS = "embeddings"
    IMAGE_GENERATION = "image_generation"
    FINE_TUNING = "fine_tuning"
    BATCH = "batch"
    PROMPT_CACHING = "prompt_caching"
    CODE = "code"


class DbType(StrEnum):
    """The three storage kinds of spec 4.3: document store, key-value cloud store, columnar analytics store."""

    MONGODB = "mongodb"
    DYNAMODB = "dynamodb"
    CLICKHOUSE = "clickhouse"
