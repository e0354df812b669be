"""`retrieve`: the agent's documents searched (seed 001's single-agent example), its best
passages returned with where each comes from, so the model can cite them:

    Retrieved for "refund window" (3 of 7 passages):

    [1] handbook.pdf, page 4
    Refunds are accepted within 30 days of purchase...

    [2] faq.md, "Billing > Refunds"
    ...
  and when nothing matches:
    Retrieved for "parking": no passage of your documents matches.

Offered to an agent that holds at least one document (the runtime reads the agent's count
of documents with the agent: no read of its own)."""

from api.documents import service as documents
from api.documents.service import PassageHit
from api.journal import sources
from api.journal.models import Source
from api.llm.types import ToolSpec
from api.search.documents import PassageOrigin
from api.tools.native.base import (
    Arguments,
    BadArguments,
    NativeTool,
    ToolContext,
    int_arg,
    schema,
    text_arg,
)

RETRIEVE_NAME = "retrieve"
DEFAULT_COUNT = 5
MAX_COUNT = 10


def cited(origin: PassageOrigin) -> str:
    """Where a passage comes from, as the model should cite it."""
    where = origin.file_name
    if origin.page is not None:
        where += f", page {origin.page}"
    if origin.heading:
        where += f', "{origin.heading}"'
    return where


def passage_sources(hits: list[PassageHit]) -> list[Source]:
    return [
        Source(
            kind="passage",
            id=f"{h.origin.document_id}:{h.origin.number}",
            via=RETRIEVE_NAME,
            score=sources.score(h.score),
            similarity=sources.score(h.similarity),
            preview=sources.preview(f"{cited(h.origin)}: {h.text}"),
        )
        for h in hits
    ]


async def retrieve(context: ToolContext, arguments: Arguments) -> str:
    query = text_arg(arguments, "query")
    count = int_arg(arguments, "count", default=DEFAULT_COUNT)
    if not 1 <= count <= MAX_COUNT:
        raise BadArguments(f"'count' must be from 1 to {MAX_COUNT}.")
    if not " ".join(query.split()):
        return "Give words to retrieve passages for: the query is empty."
    found = await documents.search(context.search, context.agent_id, query, limit=count)
    context.note(passage_sources(found.hits))
    title = f'Retrieved for "{found.query}"'
    if not found.hits:
        return f"{title}: no passage of your documents matches."
    rows = [f"[{rank}] {cited(hit.origin)}\n{hit.text}" for rank, hit in enumerate(found.hits, 1)]
    shown = f"{len(found.hits)} of {found.total} passages"
    return "\n\n".join([f"{title} ({shown}):", *rows])


RETRIEVE = NativeTool(
    ToolSpec(
        name=RETRIEVE_NAME,
        description="Search the documents uploaded to you (your knowledge base) and return "
        "the passages that best match, each with its source: the file name and its page or "
        "section. Answer from them and cite the source of what you use, e.g. "
        "(handbook.pdf, page 4).",
        parameters=schema(
            {
                "query": {"type": "string", "description": "What to look for."},
                "count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_COUNT,
                    "default": DEFAULT_COUNT,
                    "description": "How many passages, best first.",
                },
            },
            ["query"],
        ),
    ),
    retrieve,
)
