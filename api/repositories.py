"""Every domain's repository over the one table, built once at start-up (`api/main.py`'s
lifespan, the CLI's commands) and handed to the services that need them."""

from dataclasses import dataclass

from api.agents.repository import AgentRepository
from api.auth.repository import AuthRepository
from api.conversations.messages.repository import MessageRepository
from api.conversations.repository import ConversationRepository
from api.documents.repository import DocumentRepository
from api.idempotency.repository import IdempotencyRepository
from api.journal.repository import JournalRepository
from api.memory.repository import MemoryRepository
from api.memory_runs.repository import MemoryRunRepository
from api.search.repository import SearchRepository
from api.settings.repository import ProviderSettingsRepository
from api.store.table import Table
from api.subjects.repository import SubjectRepository
from api.users.repository import UserRepository


@dataclass(frozen=True, slots=True)
class Repositories:
    """One repository per domain, all over `table`. `table` is also the unit of work: a
    service whose transaction writes several domains' items gathers their ops and sends
    them with `repos.table.transact_write(ops)`."""

    table: Table
    agents: AgentRepository
    auth: AuthRepository
    conversations: ConversationRepository
    documents: DocumentRepository
    idempotency: IdempotencyRepository
    journal: JournalRepository
    memory: MemoryRepository
    memory_runs: MemoryRunRepository
    messages: MessageRepository
    provider_settings: ProviderSettingsRepository
    search: SearchRepository
    subjects: SubjectRepository
    users: UserRepository

    @classmethod
    def over(cls, table: Table) -> "Repositories":
        return cls(
            table=table,
            agents=AgentRepository(table),
            auth=AuthRepository(table),
            conversations=ConversationRepository(table),
            documents=DocumentRepository(table),
            idempotency=IdempotencyRepository(table),
            journal=JournalRepository(table),
            memory=MemoryRepository(table),
            memory_runs=MemoryRunRepository(table),
            messages=MessageRepository(table),
            provider_settings=ProviderSettingsRepository(table),
            search=SearchRepository(table),
            subjects=SubjectRepository(table),
            users=UserRepository(table),
        )
