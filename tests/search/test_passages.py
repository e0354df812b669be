"""Passages are the engine's third kind: a search that names no kinds finds memories and
messages as before, never passages; one that names passages finds them; one that names two
of the three kinds finds those two."""

from datetime import UTC, datetime

from api.documents import repository
from api.documents.models import Document, DocumentHashGuard, Passage
from api.kit.clock import FrozenClock
from api.memory import archival
from api.repositories import Repositories
from api.search.engine import SearchEngine
from api.search.index import Filters

AGENT = "agent-1"


async def test_a_search_finds_the_kinds_it_names(
    repos: Repositories, engine: SearchEngine, clock: FrozenClock
) -> None:
    await archival.insert(repos, engine, AGENT, "The boathouse key hangs by the door.")
    now = datetime.fromtimestamp(clock.now(), UTC)
    document = Document(
        agent_id=AGENT,
        document_id="d1",
        file_name="manual.md",
        media_type="text/markdown",
        content_hash="0" * 64,
        size_bytes=10,
        run_id="docrun_1",
        created_at=now,
        updated_at=now,
    )
    await repos.documents.create(document, _guard(document))
    passage = Passage(
        agent_id=AGENT,
        document_id="d1",
        number=0,
        file_name="manual.md",
        content="Boathouse > Keys\nThe boathouse key is returned to reception.",
        heading="Boathouse > Keys",
        created_at=now,
    )
    vector = (await engine.vectors([passage.content]))[0]
    await repository.write_passages(engine, document, [passage.item_with(vector, engine.model_id)])

    async def kinds(filters: Filters | None) -> list[str]:
        found = await engine.search(AGENT, "boathouse key", mode="lexical", filters=filters)
        return sorted(hit.doc.kind for hit in found.hits)

    assert await kinds(None) == ["archival"]
    assert await kinds(Filters(kinds=frozenset({"passage"}))) == ["passage"]
    assert await kinds(Filters(kinds=frozenset({"archival", "passage"}))) == [
        "archival",
        "passage",
    ]
    assert await kinds(Filters(kinds=frozenset({"message", "passage"}))) == ["passage"]
    found = await engine.search(
        AGENT, "boathouse key", mode="lexical", filters=Filters(kinds=frozenset({"passage"}))
    )
    origin = found.hits[0].doc.origin
    assert origin is not None
    assert (origin.document_id, origin.file_name, origin.heading) == (
        "d1",
        "manual.md",
        "Boathouse > Keys",
    )


def _guard(document: Document) -> DocumentHashGuard:
    return DocumentHashGuard(
        agent_id=document.agent_id,
        content_hash=document.content_hash,
        document_id=document.document_id,
    )
