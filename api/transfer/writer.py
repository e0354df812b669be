"""Pass 2 of an import: the checked records written into the caller's tenant, through each
domain's repository, in batches.

Every write is conditioned on its item being absent (or, for archival memory, its text's
hash guard), and every id is derived from the caller and the source's ids
(`api.transfer.ids`): importing a file again, or after an import was cut short, writes only
what is missing and changes nothing else. What is not written is reported with why.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from api.agents import repository as agents_repository
from api.agents.models import DEFAULT_ARCHITECTURE, Agent, AgentNameGuard
from api.agents.service import AgentNameTaken, normalize_name
from api.conversations import service as conversations_service
from api.conversations.messages import service as messages_service
from api.conversations.messages.models import Message
from api.conversations.models import Conversation, SessionLookup
from api.documents import repository as documents_repository
from api.documents.models import IMPORT_RUN, Document, DocumentHashGuard, Passage
from api.memory import archival, blocks
from api.memory import repository as memory
from api.memory import service as memory_service
from api.memory.models import ArchivalMemory, CapacityWarning, CoreMemory, MemoryBlockDef
from api.memory_runs.models import MemoryRun
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.search import vectors
from api.search.engine import SearchEngine
from api.search.vectors import Vector
from api.settings.providers import PROVIDERS
from api.store.table import Item, ItemAbsent, Put, TransactionCancelled, TxOp
from api.subjects import repository as subjects
from api.subjects.models import Subject
from api.transfer import ids
from api.transfer.exporter import SUBJECT_KEY
from api.transfer.format import (
    AgentRecord,
    ArchivalRecord,
    BlockRecord,
    ConversationRecord,
    DocumentRecord,
    MemoryRunRecord,
    MessageRecord,
    PassageRecord,
    Record,
    SubjectRecord,
    WarningRecord,
)

PASSAGE_BATCH = 40  # 1 write each, the document's check and the change's 2
ARCHIVAL_BATCH = 45  # 2 writes each, and the search change's 2: inside 100 per transaction
MESSAGE_BATCH = 40  # 2 writes each at most, the conversation's check, the change's 2
NAME_ATTEMPTS = 20
MAX_NAME = 85  # room for " (imported 19)" inside an agent name's 100 characters
EXAMPLES = 5  # ids shown per reason skipped
FALLBACK_ARCHITECTURE = DEFAULT_ARCHITECTURE


@dataclass
class Skipped:
    kind: str
    reason: str
    count: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass
class ImportReport:
    """What an import did: the agent, what was written, and what was not and why."""

    agent_id: str = ""
    agent_name: str = ""
    created: bool = False
    written: Counter[str] = field(default_factory=Counter)
    skipped: dict[tuple[str, str], Skipped] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what was changed to fit here

    def skip(self, kind: str, reason: str, what: str = "", count: int = 1) -> None:
        entry = self.skipped.setdefault((kind, reason), Skipped(kind, reason))
        entry.count += count
        if what and len(entry.examples) < EXAMPLES:
            entry.examples.append(what)

    def as_json(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "agent_name": self.agent_name,
            "created": self.created,
            "written": dict(sorted(self.written.items())),
            "skipped": [
                {"kind": s.kind, "reason": s.reason, "count": s.count, "examples": s.examples}
                for s in self.skipped.values()
            ],
            "notes": self.notes,
        }

    def summary(self) -> str:
        written = ", ".join(f"{n} {kind}" for kind, n in sorted(self.written.items())) or "nothing"
        verb = "Imported" if self.created else "Already there:"
        lines = [f"{verb} agent {self.agent_name!r} ({self.agent_id}); written: {written}."]
        lines += [f"Skipped {s.count} {s.kind}: {s.reason}" for s in self.skipped.values()]
        lines += [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)


class Writer:
    """Feed it the records of one checked file in order, then `finish()`."""

    def __init__(
        self, repos: Repositories, search: SearchEngine, email: str, source_agent_id: str
    ) -> None:
        self.repos = repos
        self.search = search
        self.email = email
        self.source_agent_id = source_agent_id
        self.agent_id = ids.agent_id(email, source_agent_id)
        self.report = ImportReport(agent_id=self.agent_id)
        self._agent: AgentRecord | None = None
        self._subject: SubjectRecord | None = None
        self._subject_id: str | None = None  # the subject written with the agent
        self._agent_written = False
        self._archival: list[ArchivalRecord] = []
        # Texts (their hashes) of replaced memories written: the only ones an agent this
        # import made can be given again by a later record.
        self._replaced_texts: set[str] = set()
        self._messages: list[MessageRecord] = []
        # The document whose passages come now (None: imported before, its passages
        # skipped), its passages waiting, and how many were written.
        self._document: Document | None = None
        self._in_document = False
        self._passages: list[PassageRecord] = []
        self._passages_written = 0

    # --- the agent ---------------------------------------------------------------------

    async def add(self, record: Record) -> None:
        if isinstance(record, AgentRecord):
            self._agent = record
            return
        if isinstance(record, SubjectRecord):
            self._subject = record
            return
        await self._ensure_agent()
        if not isinstance(record, ArchivalRecord) and self._archival:
            await self._flush_archival()
        if not isinstance(record, MessageRecord) and self._messages:
            await self._flush_messages()
        if not isinstance(record, PassageRecord) and self._in_document:
            await self._end_document()
        if isinstance(record, BlockRecord):
            await self._block(record)
        elif isinstance(record, WarningRecord):
            await self._warning(record)
        elif isinstance(record, ArchivalRecord):
            self._archival.append(record)
            if len(self._archival) >= ARCHIVAL_BATCH:
                await self._flush_archival()
        elif isinstance(record, DocumentRecord):
            await self._start_document(record)
        elif isinstance(record, PassageRecord):
            if self._document is None:
                self.report.skip("passage", "its document was imported before")
            else:
                self._passages.append(record)
                if len(self._passages) >= PASSAGE_BATCH:
                    await self._flush_passages()
        elif isinstance(record, ConversationRecord):
            await self._conversation(record)
        elif isinstance(record, MessageRecord):
            self._messages.append(record)
            if len(self._messages) >= MESSAGE_BATCH:
                await self._flush_messages()
        elif isinstance(record, MemoryRunRecord):
            await self._run(record)

    async def finish(self) -> ImportReport:
        await self._ensure_agent()
        await self._flush_archival()
        await self._flush_messages()
        if self._in_document:
            await self._end_document()
        # Blocks every agent has, where the file had none (a Letta agent without them);
        # only what is missing is written.
        assert self._agent is not None
        await memory_service.ensure_default_blocks(
            self.repos, self.agent_id, persona=self._agent.persona, clock=self.search.clock
        )
        return self.report

    async def _specialists(self, record: AgentRecord) -> list[str]:
        """The agents the imported one asks: each specialist of the file is the importer's
        agent of that id (a file of one's own agent), or the agent it becomes when its own
        file is imported (ids.agent_id: the same whatever the order of the imports). One
        not imported is left out of its turns until it is."""
        if not record.specialists:
            return []
        mine = {a.agent_id for a in await self.repos.agents.list_for(self.email)}
        return [s if s in mine else ids.agent_id(self.email, s) for s in record.specialists]

    async def _ensure_agent(self) -> None:
        if self._agent_written:
            return
        record = self._agent
        assert record is not None, "the checker puts the agent first"
        self._agent_written = True
        existing = await self.repos.agents.get(self.email, self.agent_id)
        if existing is not None:
            self.report.agent_name = existing.agent_name
            self.report.skip("agent", "imported before: this file's agent is already yours")
            if self._subject is not None:
                subject = await self.repos.subjects.get(self.email, self._subject.user_id)
                if subject is not None and subject.agent_id == self.agent_id:
                    self._subject_id = subject.user_id
            return
        architecture, provider, model = await self._choices(record)
        subject = await self._free_subject()
        for attempt in range(NAME_ATTEMPTS):
            name = _name(record.name, attempt)
            guard = AgentNameGuard(
                created_by=self.email, normalized_name=normalize_name(name), agent_id=self.agent_id
            )
            if await self.repos.agents.guard_of(self.email, guard.normalized_name):
                continue
            metadata = dict(record.metadata)
            if subject is None:
                metadata.pop(SUBJECT_KEY, None)  # the agent is nobody's memory here
            agent = Agent(
                agent_id=self.agent_id,
                created_by=self.email,
                agent_name=name,
                agent_architecture=architecture,
                agent_provider=provider,
                agent_model=model,
                agent_persona=record.persona,
                event_expiry_days=record.event_expiry_days,
                recent_turns=record.recent_turns,
                auto_supersede=record.auto_supersede,
                handoff_to_user=record.handoff_to_user,
                specialists=await self._specialists(record),
                metadata=metadata,
                created_at=record.created_at,
                updated_at=record.updated_at,
            )
            also: list[TxOp] = (
                [Put(subject.to_dynamo_item(), condition=ItemAbsent(), label=subjects.SUBJECT)]
                if subject
                else []
            )
            try:
                await self.repos.agents.create(agent, guard, also)
            except TransactionCancelled as e:
                # The agent was imported meanwhile by a concurrent import of this file.
                if e.refused(agents_repository.AGENT):
                    self._agent_written = False
                    await self._ensure_agent()
                    return
                if subject is not None and e.refused(subjects.SUBJECT):
                    subject = await self._free_subject()  # taken meanwhile: look again
                continue  # or the name was taken meanwhile
            self.report.created = True
            self.report.agent_name = name
            self.report.written["agent"] += 1
            if subject is not None:
                self._subject_id = subject.user_id
                self.report.written["subject"] += 1
            if name != record.name:
                self.report.notes.append(
                    f"you have an agent named {record.name!r}: this one is named {name!r}"
                )
            return
        raise AgentNameTaken(
            f"You have agents named {record.name!r} and its imported variants; rename one."
        )

    async def _free_subject(self) -> Subject | None:
        if self._subject is None:
            return None
        taken = await self.repos.subjects.get(self.email, self._subject.user_id)
        if taken is not None and taken.agent_id == self.agent_id:
            # Written with this very agent by a concurrent import of the same file: the
            # agent's create below is refused, and the agent found with its subject.
            return None
        if taken is not None:
            self.report.skip(
                "subject",
                f"your user_id {self._subject.user_id!r} already names another agent; its "
                "memory runs are not imported either",
                self._subject.user_id,
            )
            return None
        return Subject(
            created_by=self.email,
            user_id=self._subject.user_id,
            agent_id=self.agent_id,
            created_at=self._subject.created_at,
        )

    async def _choices(self, record: AgentRecord) -> tuple[str, str, str]:
        architecture = record.architecture
        if architecture not in ARCHITECTURES:
            self.report.notes.append(
                f"architecture {architecture!r} is not installed here: the agent uses "
                f"{FALLBACK_ARCHITECTURE}"
            )
            architecture = FALLBACK_ARCHITECTURE
        provider, model = record.provider, record.model
        known = PROVIDERS.get(provider)
        if known is None or (
            known.credentials is not None
            and await self.repos.provider_settings.get(self.email, provider) is None
        ):
            # Credentials never travel in a file: the agent waits for the user's own.
            self.report.notes.append(
                f"provider {provider!r} is not configured in your settings (credentials are "
                "never exported): the agent uses the offline model until you set its provider"
            )
            provider, model = "offline", "offline-demo"
        return architecture, provider, model

    # --- memory --------------------------------------------------------------------------

    async def _block(self, record: BlockRecord) -> None:
        definition = MemoryBlockDef(
            agent_id=self.agent_id,
            block_name=record.name,
            description=record.description,
            word_limit=record.word_limit,
            char_limit=record.char_limit,
            is_default=record.is_default,
            created_at=record.created_at,
        )
        core = CoreMemory(
            agent_id=self.agent_id,
            block_name=record.name,
            lines=record.lines,
            word_count=blocks.count_words(record.lines),
            version=1,
            updated_at=record.updated_at,
        )
        if await self.repos.memory.create_block(definition, core):
            self.report.written["block"] += 1
        else:
            self.report.skip("block", "the agent has a block of that name already", record.name)

    async def _warning(self, record: WarningRecord) -> None:
        warning = CapacityWarning(
            agent_id=self.agent_id, block_name=record.block, warning_turns=record.warning_turns
        )
        if await self.repos.memory.restore_warning(warning):
            self.report.written["capacity_warning"] += 1
        else:
            self.report.skip("capacity_warning", "the block has warned turns already")

    async def _flush_archival(self) -> None:
        batch, self._archival = self._archival, []
        if not batch:
            return
        planned = await self._plan_archival(batch)
        if not planned:
            return
        attributes = await self._vectors([p.record for p in planned])
        writes: list[list[TxOp]] = []
        upserts: list[Item] = []
        for plan, attrs in zip(planned, attributes, strict=True):
            ops, item = memory.archival_insert_ops(plan.memory, attrs, guard_of=plan.guard_of)
            writes.append([*ops] if plan.guard else [*ops[1:]])
            upserts.append(item)
        try:
            await self.search.commit(
                self.agent_id, [op for ops in writes for op in ops], upserts=upserts
            )
        except TransactionCancelled:
            # Another writer stored one of these meanwhile: one at a time, then.
            for plan, one, item in zip(planned, writes, upserts, strict=True):
                if await self._write_one(plan, one, item):
                    self.report.written["archival"] += 1
                else:
                    self.report.skip(
                        "archival", "the same text is stored already", plan.memory.memory_id
                    )
            return
        self.report.written["archival"] += len(planned)

    async def _write_one(self, plan: "_Planned", ops: list[TxOp], item: Item) -> bool:
        """One memory of a refused batch; False when it is stored already. A replaced
        memory refused only for its text's guard (held by the current memory of its text,
        stored first) is history beside it: written without the guard."""
        try:
            await self.search.commit(self.agent_id, ops, upserts=[item])
        except TransactionCancelled as e:
            if not any(e.refused(op.label) for op in ops):
                raise  # a conflict, not a verdict
            if not (plan.guard and not plan.record.current and not e.refused(memory.ARCHIVAL)):
                return False
        else:
            return True
        try:
            await self.search.commit(self.agent_id, ops[1:], upserts=[item])
        except TransactionCancelled as e:
            if not e.refused(memory.ARCHIVAL):
                raise
            return False
        return True

    async def _plan_archival(self, batch: list[ArchivalRecord]) -> list["_Planned"]:
        """The memories of a batch to write, each with what to do with its text's hash
        guard. A text has one guard, naming the latest memory stored of it; a text may be
        stored more than once when all but its latest memory were replaced (a fact true
        again), and at most one of its memories is current. So a replaced memory is written
        beside the current one of its text; a current memory is skipped when its text has
        a current memory already, and otherwise takes the guard over."""
        # Each memory is keyed by the hash of its normalized text, whatever hash the file
        # gives (checked: that one, or the one of its text as written, from before texts
        # were normalized), so a memory from an older file is found again as any other is.
        digests = [archival.content_hash(r.content) for r in batch]
        legacy = [archival.legacy_hashes(r.content) for r in batch]
        # An agent this import made has no memories but this import's, and of a text
        # (normalized) only a replaced memory comes before another: only those texts are
        # looked up. (A concurrent writer is still caught by the guards' conditions. Guards
        # of memories stored before normalization are read only, which suffices: no writer
        # makes one any more; see api/memory/archival.py.)
        wanted = (
            [d for d in digests if d in self._replaced_texts]
            if self.report.created
            else [*digests, *(h for hs in legacy for h in hs)]
        )
        stored = await self.repos.memory.archival_guards(self.agent_id, wanted) if wanted else {}
        holders = {
            digest: guard.memory_id
            for digest, older in zip(digests, legacy, strict=True)
            if (guard := stored.get(digest) or next(filter(None, map(stored.get, older)), None))
        }
        # Whether a memory holding a text is current, and whether a memory of the file is
        # in the store already (imported before), where a guard names another memory.
        ask = [
            i
            for record, digest in zip(batch, digests, strict=True)
            if holders.get(digest, record.memory_id) != record.memory_id
            for i in (holders[digest], record.memory_id)
        ]
        items = await self.repos.memory.archival_items(self.agent_id, ask) if ask else {}

        planned: list[_Planned] = []
        latest: dict[str, _Planned] = {}  # the batch's latest memory of each text
        for record, digest in zip(batch, digests, strict=True):
            mine = self._memory(record, digest)
            earlier = latest.get(digest)
            if earlier is not None:
                holder_current = earlier.record.current
            elif digest in holders:
                holder = holders[digest]
                if holder == record.memory_id:
                    self.report.skip(
                        "archival", "the same text is stored already", record.memory_id
                    )
                    continue
                if record.memory_id in items:
                    self.report.skip("archival", "imported before", record.memory_id)
                    continue
                found = items.get(holder)
                holder_current = found is not None and "superseded_by" not in found
            else:  # the text's first memory
                plan = _Planned(record, mine, guard=True)
                planned.append(plan)
                latest[digest] = plan
                continue
            if holder_current and record.current:
                self.report.skip("archival", "the same text is stored already", record.memory_id)
                continue
            if holder_current or not record.current:  # history beside its text's memory
                planned.append(_Planned(record, mine, guard=False))
                continue
            # The current memory of a text whose memories were all replaced: the guard
            # is its from now on (moved, as when the engine stores a fact true again).
            if earlier is not None:
                plan = _Planned(record, mine, guard=earlier.guard, guard_of=earlier.guard_of)
                earlier.guard = False  # one write of a guard per transaction
            else:
                guard = stored.get(digest)
                moved = None if guard is None else guard.memory_id
                plan = _Planned(record, mine, guard=True, guard_of=moved)
            planned.append(plan)
            latest[digest] = plan
        self._replaced_texts.update(
            archival.content_hash(p.record.content) for p in planned if not p.record.current
        )
        return planned

    def _memory(self, record: ArchivalRecord, digest: str) -> ArchivalMemory:
        return ArchivalMemory(
            agent_id=self.agent_id,
            memory_id=record.memory_id,
            content=record.content,
            content_hash=digest,
            created_at=record.created_at,
            category=record.category,
            context=record.context,
            confidence=record.confidence,
            tags=record.tags,
            valid_from=record.valid_from,
            superseded_at=record.superseded_at,
            superseded_by=record.superseded_by,
        )

    async def _vectors(self, records: Sequence[ArchivalRecord | PassageRecord]) -> list[Item]:
        """Each memory's vector attributes: the file's vector when this server embeds with
        the same model, otherwise the text embedded again."""
        model = self.search.model_id
        attributes: list[Item | None] = []
        missing: list[int] = []
        for i, record in enumerate(records):
            vector = record.vector
            if vector is not None and model is not None and vector.model == model:
                attributes.append(
                    {
                        vectors.EMBEDDING: vector.packed(),
                        vectors.EMBEDDING_MODEL: vector.model,
                        vectors.EMBEDDING_DIM: vector.dim,
                    }
                )
            else:
                attributes.append(None)
                missing.append(i)
        if missing:
            made = await self.search.vectors([records[i].content for i in missing], background=True)
            for i, fresh in zip(missing, made, strict=True):
                attributes[i] = vectors.attributes(fresh, model)
            if model is not None:
                self.report.written["embedded"] += len(missing)
        return [a or {} for a in attributes]

    # --- documents ---------------------------------------------------------------------

    async def _start_document(self, record: DocumentRecord) -> None:
        """The document, made in state `processing` (its passages are written next, then it
        is ready), with its guard and the agent's count; None when imported before."""
        self._in_document, self._passages_written = True, 0
        document_id = ids.derived(self.email, self.source_agent_id, "document", record.document_id)
        document = Document(
            agent_id=self.agent_id,
            document_id=document_id,
            file_name=record.file_name,
            media_type=record.media_type,
            content_hash=record.content_hash,
            size_bytes=record.size_bytes,
            pages=record.pages,
            run_id=f"{IMPORT_RUN}{document_id[:12]}",
            created_at=record.created_at,
            updated_at=datetime.fromtimestamp(self.search.clock.now(), UTC),
        )
        guard = DocumentHashGuard(
            agent_id=self.agent_id, content_hash=record.content_hash, document_id=document_id
        )
        try:
            await self.repos.documents.create(
                document, guard, [agents_repository.documents_op(self.email, self.agent_id, 1)]
            )
        except TransactionCancelled as e:
            if not (
                e.refused(documents_repository.DOCUMENT)
                or e.refused(documents_repository.HASH_GUARD)
            ):
                raise
            existing = await self.repos.documents.get(self.agent_id, document_id)
            if existing is not None and existing.state == "processing":
                self._document = existing  # an import cut short: its passages again
                return
            self.report.skip("document", "imported before, or the agent holds this file")
            self._document = None
            return
        self._document = document

    async def _flush_passages(self) -> None:
        document, batch = self._document, self._passages
        self._passages = []
        if document is None or not batch:
            return
        attributes = await self._vectors(batch)
        items = [
            {
                **Passage.of(
                    document, record.number, record.content, record.page, record.heading
                ).to_dynamo_item(),
                **vector,
            }
            for record, vector in zip(batch, attributes, strict=True)
        ]
        await documents_repository.write_passages(self.search, document, items)
        self._passages_written += len(items)
        self.report.written["passage"] += len(items)

    async def _end_document(self) -> None:
        await self._flush_passages()
        document, self._document, self._in_document = self._document, None, False
        if document is None:
            return
        await self.repos.documents.set_state(
            document,
            "ready",
            expected="processing",
            fields={"passages": self._passages_written},
        )
        self.report.written["document"] += 1

    # --- conversations -----------------------------------------------------------------

    def _conversation_id(self, source_id: str) -> str:
        return ids.conversation_id(self.email, self.source_agent_id, source_id)

    def _session_id(self, record: ConversationRecord, conversation_id: str) -> str | None:
        """A client's session id is kept; those the service made name the source's
        conversation or agent, and name the new ones here."""
        session_id = record.session_id
        if session_id == record.conversation_id:  # a conversation opened by id
            return conversation_id
        if session_id is not None and session_id.endswith(f"_{self.source_agent_id}_default"):
            return conversations_service.default_session_id(self.email, self.agent_id)
        return session_id

    async def _conversation(self, record: ConversationRecord) -> None:
        conversation_id = self._conversation_id(record.conversation_id)
        conversation = Conversation(
            conversation_id=conversation_id,
            created_by=self.email,
            agent_id=self.agent_id,
            title=record.title,
            session_id=self._session_id(record, conversation_id),
            created_at=record.created_at,
            updated_at=record.updated_at,
            # A file keeps when it was last changed, which is when its last turn ended
            # unless it was renamed since: the nearest to its activity a file says.
            last_activity_at=record.updated_at,
        )
        if conversation.session_id is None:
            created = await self.repos.conversations.create(conversation)
        else:
            lookup = SessionLookup(
                created_by=self.email,
                agent_id=self.agent_id,
                session_id=conversation.session_id,
                conversation_id=conversation.conversation_id,
            )
            created = True
            try:
                await self.repos.conversations.create_for_session(conversation, lookup)
            except TransactionCancelled:
                created = False
        if created:
            self.report.written["conversation"] += 1
        else:
            self.report.skip(
                "conversation", "imported before (its messages are checked one by one)"
            )

    async def _flush_messages(self) -> None:
        batch, self._messages = self._messages, []
        if not batch:
            return
        now = self.search.clock.now()
        wanted: list[Message] = []
        for record in batch:
            if record.ttl is not None and record.ttl <= now:
                self.report.skip("message", "expired (its agent's event expiry)", record.message_id)
            else:
                wanted.append(self._message(record))
        fresh = await self._not_stored(wanted)
        if not fresh:
            return
        texts = list(dict.fromkeys(m.content for m in fresh if messages_service.searchable(m)))
        by_text = dict(zip(texts, await self.search.vectors(texts, background=True), strict=True))
        if await self._commit_messages(fresh, by_text):
            return
        # Some were written meanwhile (a concurrent import of this file): the rest once
        # more; refused again, their conversation is going away.
        fresh = await self._not_stored(fresh)
        if fresh and not await self._commit_messages(fresh, by_text):
            self.report.skip(
                "message",
                "their conversation was deleted or changed during the import",
                fresh[0].message_id,
                count=len(fresh),
            )

    async def _commit_messages(
        self, fresh: list[Message], by_text: Mapping[str, Vector | None]
    ) -> bool:
        ops, recalls = messages_service.recorded_ops(
            self.search, self.email, self.agent_id, fresh, by_text, activity=False
        )
        try:
            await self.search.commit(self.agent_id, ops, upserts=recalls)
        except TransactionCancelled:
            return False
        self.report.written["message"] += len(fresh)
        return True

    async def _not_stored(self, wanted: list[Message]) -> list[Message]:
        """Those not in the store yet; the others are reported as imported before."""
        stored = await self.repos.messages.stored([m.key() for m in wanted])
        for m in wanted:
            if m.key() in stored:
                self.report.skip("message", "imported before", m.message_id)
        return [m for m in wanted if m.key() not in stored]

    def _message(self, record: MessageRecord) -> Message:
        return Message(
            conversation_id=self._conversation_id(record.conversation_id),
            message_id=record.message_id,
            role=record.role,
            content=record.content,
            actor_id=record.actor_id,
            tool_calls=record.tool_calls,
            tool_call_id=record.tool_call_id,
            interrupted=record.interrupted,
            metadata=record.metadata,
            created_at=record.created_at,
            ttl=record.ttl,
        )

    # --- seed 004's runs ---------------------------------------------------------------

    async def _run(self, record: MemoryRunRecord) -> None:
        if self._subject_id is None:
            self.report.skip("memory_run", "the agent's subject was not imported", record.run_id)
            return
        if record.state not in ("completed", "failed"):
            self.report.skip(
                "memory_run", "it had not ended when exported: it is not run again", record.run_id
            )
            return
        run = MemoryRun(
            run_id=ids.run_id(self.agent_id, record.run_id),
            agent_id=self.agent_id,
            user_email=self.email,
            subject_id=self._subject_id,
            conversation_id=self._conversation_id(record.conversation_id),
            message_keys=record.message_keys,
            messages_count=record.messages_count,
            queued_at=record.queued_at,
            state=record.state,
            attempts=record.attempts,
            error=record.error,
            result=record.result,
            edits=record.edits,
            created_at=record.created_at,
            started_at=record.started_at,
            ended_at=record.ended_at,
        )
        if await self.repos.memory_runs.restore(run):
            self.report.written["memory_run"] += 1
        else:
            self.report.skip("memory_run", "imported before", record.run_id)


@dataclass
class _Planned:
    """A memory of the file to write; with `guard`, its text's hash guard too (made, or
    with `guard_of` taken over from that replaced memory of the same text)."""

    record: ArchivalRecord
    memory: ArchivalMemory
    guard: bool
    guard_of: str | None = None


def _name(name: str, attempt: int) -> str:
    if attempt == 0:
        return name
    base = name[:MAX_NAME].rstrip()
    return f"{base} (imported)" if attempt == 1 else f"{base} (imported {attempt})"
