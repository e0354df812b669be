"""Seed 002's bodies and objects, field for field. Requests refuse fields the seed does not
name (except `session_id`, ours, on POST /messages) and values of the wrong type."""

import uuid
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, JsonValue, model_validator

from api.agents.models import Agent
from api.chat.schemas import MAX_SESSION_ID_BYTES
from api.conversations.messages.models import Message, MessageRecall, SaidRole
from api.conversations.messages.schemas import ID_PATTERN
from api.conversations.messages.service import MessageHit
from api.kit.json_data import NamedKeys, storable
from api.kit.model import ApiModel
from api.kit.text import BlockName, MetadataKey, PlainName, Visible
from api.memory.blocks import MAX_BLOCK_NAME
from api.memory.service import BlockView
from api.search import params as search_query
from api.search.params import MAX_QUERY_CHARS

MAX_CONTENT_CHARS = 50_000  # a message is stored twice (itself and its searchable copy)
MAX_CONTEXT_QUERY_CHARS = 32_000  # a prompt, as the interceptor sends it
MAX_BATCH_MESSAGES = 10  # with their copies, within a transaction's 100 items and 4 MB
# Block ids are derived, not stored: the same agent and label always give the same id.
BLOCK_IDS = uuid.UUID("5eed0002-b10c-4d1d-8e5a-6c0de1b10c50")


def _fits_a_key(session_id: str) -> str:
    if len(session_id.encode()) > MAX_SESSION_ID_BYTES:
        raise ValueError(f"at most {MAX_SESSION_ID_BYTES} bytes of UTF-8")
    return session_id


AgentName = Annotated[PlainName, Field(min_length=1, max_length=100)]
SessionId = Annotated[
    Annotated[
        str, Field(min_length=1, max_length=256, pattern=ID_PATTERN), AfterValidator(_fits_a_key)
    ]
    | None,
    Field(
        description="Ours, not the seed's: the session (conversation) the message belongs "
        "to; the agent's default session (`{user_id}_{agent_id}_default`, as POST /chat "
        "names it) when left out."
    ),
]
# Null or an object, kept as sent (null stays null, as the seed's objects show it).
OptionalMetadata = (
    Annotated[dict[MetadataKey, JsonValue], AfterValidator(storable), NamedKeys] | None
)


class MemoryServerMessageIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    agent_name: AgentName
    role: SaidRole
    content: Annotated[Visible, Field(min_length=1, max_length=MAX_CONTENT_CHARS)]
    metadata: OptionalMetadata = None
    session_id: SessionId = None


class SaidIn(ApiModel):
    """One message of a batch: POST /messages's fields less the agent and the session."""

    model_config = ConfigDict(extra="forbid")

    role: SaidRole
    content: Annotated[Visible, Field(min_length=1, max_length=MAX_CONTENT_CHARS)]
    metadata: OptionalMetadata = None


class MessagesIn(ApiModel):
    """Ours, not the seed's: POST /messages/batch."""

    model_config = ConfigDict(extra="forbid")

    agent_name: AgentName
    messages: Annotated[list[SaidIn], Field(min_length=1, max_length=MAX_BATCH_MESSAGES)]
    session_id: SessionId = None


class SearchIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    agent_name: AgentName
    query: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_QUERY_CHARS,
            validation_alias=search_query.NAMES,
            description=search_query.DESCRIPTION,
        ),
    ]
    limit: Annotated[
        int | None,
        Field(
            strict=True,
            ge=1,
            description="Results at most: MEMORY_DEFAULT_SEARCH_LIMIT (5) when left out, "
            "no more than MEMORY_MAX_SEARCH_LIMIT (20).",
        ),
    ] = None
    # Ours, beside the seed's fields: left out, the search is the seed's.
    min_similarity: Annotated[
        float | None,
        Field(
            strict=True,
            ge=-1.0,
            le=1.0,
            description="The least cosine similarity a semantic match needs; "
            "default: the model's floor.",
        ),
    ] = None
    as_of: search_query.Moment | None = Field(
        default=None,
        description="Ours: as the search would have answered then, among the messages said "
        "by that moment. " + search_query.AS_OF_DESCRIPTION,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_query(cls, data: Any) -> Any:
        """`q` alone is the query; beside `query`, with the same value, it is dropped (or
        the model would refuse it as a field of its own); with another, ConflictingQuery.
        That is an AppError, not a ValueError, on purpose: pydantic lets it through, so the
        answer is the same 400 `conflicting_query` as the other search routes give."""
        if isinstance(data, dict) and search_query.NAME in data and search_query.ALIAS in data:
            search_query.check_one(data)
            return {k: v for k, v in data.items() if k != search_query.ALIAS}
        return data


class MemoryBlockIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    agent_name: AgentName
    label: Annotated[BlockName, Field(min_length=1, max_length=MAX_BLOCK_NAME)]
    value: str = Field(description="The block's lines, one per line.")


class MemoryBlockUpdate(ApiModel):
    model_config = ConfigDict(extra="forbid")

    value: str = Field(description="Replaces every line of the block.")


class ContextIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    agent_name: AgentName | None = Field(
        default=None, description="The seed's client sends it; it must name the path's agent."
    )
    query: Annotated[str, Field(max_length=MAX_CONTEXT_QUERY_CHARS)] = Field(
        description="What the messages are chosen for; blank: memory blocks only."
    )
    as_of: search_query.Moment | None = Field(
        default=None,
        description="Ours: the relevant messages among those said by that moment (the "
        "memory blocks are as they are now). " + search_query.AS_OF_DESCRIPTION,
    )


class MemoryServerMessageOut(ApiModel):
    """Seed 002's Message object, and the conversation it is in."""

    id: str
    agent_id: str
    role: str
    content: str
    created_at: datetime
    metadata: dict[str, JsonValue] | None
    similarity: float | None = Field(
        description="Cosine similarity with the query (search and context only; null when "
        "the message or the server has no embedding)."
    )
    conversation_id: str

    @classmethod
    def of_message(cls, agent_id: str, message: Message) -> "MemoryServerMessageOut":
        return cls(
            id=message.message_id,
            agent_id=agent_id,
            role=message.role,
            content=message.content,
            created_at=message.created_at,
            metadata=message.metadata,
            similarity=None,
            conversation_id=message.conversation_id,
        )

    @classmethod
    def of_copy(cls, recall: MessageRecall) -> "MemoryServerMessageOut":
        return cls(
            id=recall.message_id,
            agent_id=recall.agent_id,
            role=recall.role,
            content=recall.content,
            created_at=recall.created_at,
            metadata=recall.metadata,
            similarity=None,
            conversation_id=recall.conversation_id,
        )

    @classmethod
    def of_hit(cls, agent_id: str, hit: MessageHit) -> "MemoryServerMessageOut":
        return cls(
            id=hit.message_id,
            agent_id=agent_id,
            role=hit.role,
            content=hit.content,
            created_at=hit.created_at,
            metadata=hit.metadata,
            similarity=hit.similarity,
            conversation_id=hit.conversation_id,
        )


class MemoryBlockOut(ApiModel):
    """Seed 002's MemoryBlock object, and the version to send back in If-Match."""

    id: str
    agent_id: str
    label: str
    value: str = Field(description="The block's lines joined by newlines.")
    created_at: datetime
    updated_at: datetime
    version: int = Field(description="Also the ETag; send it in If-Match to write only on it.")

    @classmethod
    def of(cls, agent: Agent, block: BlockView) -> "MemoryBlockOut":
        # Blocks written before they kept their times take the agent's.
        created = block.created_at or agent.created_at
        return cls(
            id=str(uuid.uuid5(BLOCK_IDS, f"{agent.agent_id}/{block.name}")),
            agent_id=agent.agent_id,
            label=block.name,
            value="\n".join(block.lines),
            created_at=created,
            updated_at=block.updated_at or created,
            version=block.version,
        )


class ContextOut(ApiModel):
    memory_blocks: list[MemoryBlockOut]
    relevant_messages: list[MemoryServerMessageOut]
