"""What the index holds of each searchable item, read straight from the table's items.

Three kinds share one index per agent: archival memories (`Archival#...`), the agent's
messages (`Recall#...`, the searchable copy of each user, assistant or system message that
has text: `api.conversations.messages.models.MessageRecall`) and the passages of its
documents (`Passage#...`: `api.documents.models.Passage`). Items are parsed by hand, not
validated as models: an index load reads every one of them.
"""

import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from api.kit.json_data import plain
from api.search import facts, vectors
from api.search.vectors import StoredVector, Vector
from api.store import keys
from api.store.table import SK, Item

Kind = Literal["archival", "message", "passage"]
KINDS: tuple[Kind, ...] = ("archival", "message", "passage")
# What a search looks among unless it names its kinds: memories and messages. A document's
# passages are found only by searches that ask for them (`retrieve`, the documents' search).
MEMORY_KINDS: frozenset[Kind] = frozenset(("archival", "message"))


@dataclass(slots=True)
class Doc:
    sk: str
    kind: Kind
    text: str
    created_at: float  # epoch seconds
    item_id: str  # memory_id or message_id
    # Only a vector of the engine's model; an index keeps it in its own matrix (quantized)
    # and holds the document without it.
    vector: Vector | StoredVector | None = None
    content_hash: str | None = None  # archival
    category: str | None = None  # archival: seed 003's (api.memory.models.Category)
    context: str | None = None  # archival
    confidence: float | None = None  # archival
    tags: tuple[str, ...] = ()  # archival: seed 004's (who said it)
    # archival: when it became true (None: when stored), when it stopped being true and
    # what replaced it (None: it is current), and the attribute it states
    # (`facts`), which a newer statement of it takes over
    valid_from: float | None = None
    superseded_at: float | None = None
    superseded_by: str | None = None
    attribute: str | None = None
    conversation_id: str | None = None  # message
    role: str | None = None
    actor_id: str | None = None
    interrupted: bool = False
    ttl: float | None = None
    # message: what its client stored with it, as the store gives it back (whether the
    # doc came from the table or from a write just made), kept so that a search asking
    # for it (seed 002's /context) need not read the hits again; and an estimate of what
    # it holds in memory, for the index's budget
    metadata: Any = None
    metadata_bytes: int = 0
    # passage: where it comes from (its document, file name, page or heading), which a
    # search gives back with it
    origin: "PassageOrigin | None" = None

    def live(self, now: float) -> bool:
        return self.ttl is None or self.ttl > now

    @property
    def valid_since(self) -> float:
        return self.created_at if self.valid_from is None else self.valid_from

    def valid_at(self, moment: float) -> bool:
        """Whether it was true at `moment`: a message from then or before, a memory valid then."""
        if self.kind != "archival":
            return self.created_at <= moment
        return self.valid_since <= moment and (
            self.superseded_at is None or self.superseded_at > moment
        )


@dataclass(frozen=True, slots=True)
class PassageOrigin:
    document_id: str
    number: int  # its place in the document, from 0
    file_name: str
    page: int | None = None  # a PDF's page, from 1
    heading: str | None = None  # a Markdown or HTML heading path: "Setup > Linux"


def _epoch(value: Any) -> float:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _metadata_bytes(metadata: Any) -> int:
    """Python objects take several times their JSON's length (a small object of three
    short strings: about 7 times; one long string: about once): counted high."""
    return 200 + 6 * len(json.dumps(metadata, default=str))


def _shared(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)


def _attribute(text: str, category: str | None) -> str | None:
    found = facts.statement_of(text, category)
    return None if found is None else sys.intern(found.key)


def of_item(item: Item, model_id: str | None) -> Doc | None:
    """The doc of an archival or message item; None for any other item."""
    entity = item.get(keys.ENTITY)
    vector = vectors.stored(item, model_id)  # no copy: an index quantizes it soon
    if entity == keys.ARCHIVAL_MEMORY:
        valid_from, superseded_at = item.get("valid_from"), item.get("superseded_at")
        category = _shared(item.get("category"))
        return Doc(
            sk=item[SK],
            kind="archival",
            text=item["content"],
            created_at=_epoch(item["created_at"]),
            item_id=item["memory_id"],
            vector=vector,
            content_hash=item.get("content_hash"),
            category=category,
            context=item.get("context"),
            confidence=float(item["confidence"]) if item.get("confidence") is not None else None,
            tags=tuple(item.get("tags") or ()),
            valid_from=_epoch(valid_from) if valid_from is not None else None,
            superseded_at=_epoch(superseded_at) if superseded_at is not None else None,
            superseded_by=item.get("superseded_by"),
            attribute=_attribute(item["content"], category),
        )
    if entity == keys.MESSAGE_RECALL:
        ttl = item.get("ttl")
        metadata = item.get("metadata")
        return Doc(
            sk=item[SK],
            kind="message",
            text=item["content"],
            created_at=_epoch(item["created_at"]),
            item_id=item["message_id"],
            vector=vector,
            # Strings many documents share are held once (an index holds many documents).
            conversation_id=sys.intern(item["conversation_id"]),
            role=sys.intern(item["role"]),
            actor_id=_shared(item.get("actor_id")),
            interrupted=bool(item.get("interrupted", False)),
            ttl=float(ttl) if ttl is not None else None,
            metadata=plain(metadata) if metadata is not None else None,
            metadata_bytes=_metadata_bytes(metadata) if metadata is not None else 0,
        )
    if entity == keys.PASSAGE:
        return Doc(
            sk=item[SK],
            kind="passage",
            text=item["content"],
            created_at=_epoch(item["created_at"]),
            item_id=f"{item['document_id']}:{item['number']}",
            vector=vector,
            origin=PassageOrigin(
                document_id=sys.intern(item["document_id"]),
                number=int(item["number"]),
                file_name=sys.intern(item["file_name"]),
                page=int(item["page"]) if item.get("page") is not None else None,
                heading=item.get("heading"),
            ),
            metadata_bytes=len(item.get("heading") or "") + 100,
        )
    return None
