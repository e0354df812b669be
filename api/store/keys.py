"""Every key of the one table, and nothing else builds one: the catalogue of access patterns.

Seed 000's patterns are kept verbatim, including its `USER#`/`CONVERSATION#` spellings for
conversations. Guard and lookup items follow the same style. Client-chosen values (agent
names, session ids) only ever appear in sort keys under their owner's partition; global
partitions (`CONVERSATION#{id}`, `ApiKey#{hash}`, ...) hold server-made ids or secrets' hashes.

Entity             pk / sk                                          access pattern
User               User#{email} / User#Metadata                     get user by email
Agent              User#{email} / Agent#{agent_id}                  list a user's agents, get one
AgentNameGuard     User#{email} / AgentName#{normalized name}       unique agent name per user
ProviderSettings   User#{email} / ProviderSettings#{provider}       a user's provider credentials
Conversation       USER#{email} / CONVERSATION#{conversation_id}    get one (by agent: gsi1)
SessionLookup      USER#{email} / Session#{agent_id}#{session_id}   session id -> conversation
Message            CONVERSATION#{id} / MESSAGE#{timestamp}#{message_id} messages in order, last K
ConversationLease  CONVERSATION#{id} / Lease                         the turn running in it
MemoryBlockDef     Agent#{agent_id} / MemoryBlockDef#{block}        an agent's block definitions
CoreMemory         Agent#{agent_id} / CoreMemory#{block}            read/update a block's lines
CoreMemoryChange   Agent#{agent_id} / BlockHistory#{block}#{created}#{n} a block's line history
ArchivalMemory     Agent#{agent_id} / Archival#{timestamp}#{memory_id} chronological archival
ArchivalHashGuard  Agent#{agent_id} / ArchivalHash#{sha256}         idempotent archival insert
DeletedArchival    Agent#{agent_id} / ArchivalDeleted#{memory_id}   a deleted memory, restorable
                                                                    until its `ttl`
CapacityWarning    Agent#{agent_id} / CapacityWarning#{block}       warning turns per block
MessageRecall      Agent#{agent_id} / Recall#{timestamp}#{message_id} searchable messages
Document           Agent#{agent_id} / Upload#{document_id}          an agent's documents, get one
DocumentHashGuard  Agent#{agent_id} / UploadHash#{sha256}           one document per file
DocumentText       Agent#{agent_id} / UploadText#{document_id}#{n}  passages to be indexed
Passage            Agent#{agent_id} / Passage#{document_id}#{n}     a document's passages
SearchVersion      Agent#{agent_id} / SearchVersion                 changes to what search covers
SearchChange       Agent#{agent_id} / SearchChange#{version}        what change `version` touched
GoogleSubject      GoogleSub#{sub} / GoogleSub#Metadata             Google account -> user email
ApiKey             ApiKey#{sha256} / ApiKey#Metadata                authenticate a machine client
RefreshToken       RefreshToken#{sha256} / RefreshToken#Metadata    rotate a session's refresh token
AuthSession        AuthSession#{family_id} / AuthSession#Metadata   a sign-in's token family
OAuthNonce         OAuthNonce#{sha256} / OAuthNonce#Metadata        an ID token nonce, used once
ApiKeyRef          User#{email} / ApiKeyRef#{key_id}                list and revoke a user's keys
IdempotencyRecord  User#{email} / Idempotency#{sha256}              a request's first answer, by key
Run                Run#{run_id} / Run                               a turn's state and owner
RunEvents          Run#{run_id} / Events#{first event number}       a turn's events, in batches
LiveRun            LiveRuns#{shard} / Run#{run_id}                  turns running, for the sweep
Subject            User#{email} / Subject#{user_id}                 seed 004's user_id -> agent
MemoryRun          Agent#{agent_id} / MemoryRun#{run_id}            a memory run's state
MemoryRunQueued    Agent#{agent_id} / MemoryRunQueue#{ts}#{run_id}  a subject's runs, in order
MemoryLease        Agent#{agent_id} / MemoryLease                   the run working on a subject
PendingMemoryRun   PendingMemoryRuns#{shard} / MemoryRun#{run_id}   runs not ended, for the sweep
SchemaVersion      Schema / Version                                 which layout the table holds

Index gsi1 (sparse): an agent's conversations by last activity, the latest last:
gsi1pk `Agent#{agent_id}`, gsi1sk `CONVERSATION#{last activity}#{conversation_id}` (moved by
each turn's closing write; a conversation's creation until its first);
provider credentials by the key that encrypted them (for rotation):
gsi1pk `CredentialsKey#{key_id}`, gsi1sk `{email}#{provider}`.
"""

import hashlib
from datetime import UTC, datetime

from api.store.table import InvalidKey, Key, Sk, SkCondition

# Entity types, stored on every item as `entity`.
USER = "User"
AGENT = "Agent"
AGENT_NAME_GUARD = "AgentNameGuard"
PROVIDER_SETTINGS = "ProviderSettings"
CONVERSATION = "Conversation"
SESSION_LOOKUP = "SessionLookup"
MESSAGE = "Message"
CONVERSATION_LEASE = "ConversationLease"
MEMORY_BLOCK_DEF = "MemoryBlockDef"
CORE_MEMORY = "CoreMemory"
CORE_MEMORY_CHANGE = "CoreMemoryChange"
ARCHIVAL_MEMORY = "ArchivalMemory"
ARCHIVAL_HASH_GUARD = "ArchivalHashGuard"
DELETED_ARCHIVAL = "DeletedArchival"
CAPACITY_WARNING = "CapacityWarning"
MESSAGE_RECALL = "MessageRecall"
DOCUMENT = "Document"
DOCUMENT_HASH_GUARD = "DocumentHashGuard"
DOCUMENT_TEXT = "DocumentText"
PASSAGE = "Passage"
SEARCH_VERSION = "SearchVersion"
SEARCH_CHANGE = "SearchChange"
GOOGLE_SUBJECT = "GoogleSubject"
API_KEY = "ApiKey"
REFRESH_TOKEN = "RefreshToken"  # noqa: S105 (an entity name)
AUTH_SESSION = "AuthSession"
OAUTH_NONCE = "OAuthNonce"
API_KEY_REF = "ApiKeyRef"
IDEMPOTENCY_RECORD = "IdempotencyRecord"
RUN = "Run"
RUN_EVENTS = "RunEvents"
LIVE_RUN = "LiveRun"
SUBJECT = "Subject"
MEMORY_RUN = "MemoryRun"
MEMORY_RUN_QUEUED = "MemoryRunQueued"
MEMORY_LEASE = "MemoryLease"
PENDING_MEMORY_RUN = "PendingMemoryRun"
SCHEMA_VERSION = "SchemaVersion"

ENTITY = "entity"
GSI1 = "gsi1"

Query = tuple[str, SkCondition]  # a partition and the sort-key condition that selects a kind


def _part(name: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidKey(f"The {name} in a key must be a non-empty string.")
    return value


def timestamp(epoch: float) -> str:
    """A sort-key timestamp: fixed-width UTC with microseconds, so text order is time order."""
    return time_of(datetime.fromtimestamp(epoch, tz=UTC))


def time_of(moment: datetime) -> str:
    """`timestamp` of a datetime, exactly: no trip through a float to lose a microsecond."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- users ---------------------------------------------------------------------------------


def user_partition(email: str) -> str:
    return f"User#{_part('email', email)}"


def user(email: str) -> Key:
    return Key(user_partition(email), "User#Metadata")


def google_subject(sub: str) -> Key:
    return Key(f"GoogleSub#{_part('subject', sub)}", "GoogleSub#Metadata")


def api_key(key_hash: str) -> Key:
    return Key(f"ApiKey#{_part('key hash', key_hash)}", "ApiKey#Metadata")


def refresh_token(token_hash: str) -> Key:
    return Key(f"RefreshToken#{_part('token hash', token_hash)}", "RefreshToken#Metadata")


def auth_session(family_id: str) -> Key:
    return Key(f"AuthSession#{_part('session id', family_id)}", "AuthSession#Metadata")


def oauth_nonce(nonce_hash: str) -> Key:
    return Key(f"OAuthNonce#{_part('nonce hash', nonce_hash)}", "OAuthNonce#Metadata")


def api_key_ref(email: str, key_id: str) -> Key:
    return Key(user_partition(email), f"ApiKeyRef#{_part('key id', key_id)}")


def api_key_refs_of(email: str) -> Query:
    return user_partition(email), Sk.begins_with("ApiKeyRef#")


def idempotency_record(email: str, key_hash: str) -> Key:
    """A request's first answer, under its sender and the hash of its Idempotency-Key."""
    return Key(user_partition(email), f"Idempotency#{_part('key hash', key_hash)}")


# --- agents and settings -----------------------------------------------------------------


def agent(email: str, agent_id: str) -> Key:
    return Key(user_partition(email), f"Agent#{_part('agent id', agent_id)}")


def agents_of(email: str) -> Query:
    return user_partition(email), Sk.begins_with("Agent#")


def agent_name_guard(email: str, normalized_name: str) -> Key:
    return Key(user_partition(email), f"AgentName#{_part('agent name', normalized_name)}")


def provider_settings(email: str, provider: str) -> Key:
    return Key(user_partition(email), f"ProviderSettings#{_part('provider', provider)}")


def provider_settings_of(email: str) -> Query:
    return user_partition(email), Sk.begins_with("ProviderSettings#")


def provider_settings_index(key_id: str, email: str, provider: str) -> dict[str, str]:
    return {
        "gsi1pk": f"CredentialsKey#{_part('key id', key_id)}",
        "gsi1sk": f"{_part('email', email)}#{_part('provider', provider)}",
    }


def provider_settings_by_key(key_id: str) -> str:
    """The gsi1 partition of credentials encrypted with one key: what rotation rewrites."""
    return f"CredentialsKey#{_part('key id', key_id)}"


# --- conversations and messages ----------------------------------------------------------


def conversations_partition(email: str) -> str:
    return f"USER#{_part('email', email)}"


def conversation(email: str, conversation_id: str) -> Key:
    return Key(
        conversations_partition(email), f"CONVERSATION#{_part('conversation id', conversation_id)}"
    )


def conversation_index(agent_id: str, active: str, conversation_id: str) -> dict[str, str]:
    """Where a conversation sorts among its agent's: by `active`, the timestamp of its last
    activity. The attributes are rewritten as it moves (an update, never a second item), so
    a conversation is listed once wherever it stands."""
    return {
        "gsi1pk": f"Agent#{_part('agent id', agent_id)}",
        "gsi1sk": f"CONVERSATION#{_part('timestamp', active)}#{conversation_id}",
    }


def conversations_of_agent(agent_id: str) -> Query:
    return f"Agent#{_part('agent id', agent_id)}", Sk.begins_with("CONVERSATION#")


def session_lookup(email: str, agent_id: str, session_id: str) -> Key:
    return Key(
        conversations_partition(email),
        f"Session#{_part('agent id', agent_id)}#{_part('session id', session_id)}",
    )


def session_lookups_of(email: str, agent_id: str) -> Query:
    return conversations_partition(email), Sk.begins_with(f"Session#{_part('agent id', agent_id)}#")


def conversation_id_of(conversation_sk: str) -> str:
    return conversation_sk.removeprefix("CONVERSATION#")


def messages_partition(conversation_id: str) -> str:
    return f"CONVERSATION#{_part('conversation id', conversation_id)}"


def message(conversation_id: str, ts: str, message_id: str) -> Key:
    return Key(
        messages_partition(conversation_id),
        f"MESSAGE#{_part('timestamp', ts)}#{_part('message id', message_id)}",
    )


def conversation_lease(conversation_id: str) -> Key:
    """Held by the turn running in the conversation, on whichever replica."""
    return Key(messages_partition(conversation_id), "Lease")


def messages_of(conversation_id: str) -> Query:
    return messages_partition(conversation_id), Sk.begins_with("MESSAGE#")


# --- memory --------------------------------------------------------------------------------


def agent_partition(agent_id: str) -> str:
    return f"Agent#{_part('agent id', agent_id)}"


def memory_block_def(agent_id: str, block: str) -> Key:
    return Key(agent_partition(agent_id), f"MemoryBlockDef#{_part('block name', block)}")


def core_memory(agent_id: str, block: str) -> Key:
    return Key(agent_partition(agent_id), f"CoreMemory#{_part('block name', block)}")


_BLOCK_VERSION_DIGITS = 12  # zero-padded, so text order is version order
MAX_BLOCK_VERSION = 10**_BLOCK_VERSION_DIGITS - 1


def _block_history_prefix(agent_id: str, block: str, block_created_at: datetime | None) -> str:
    # A block's creation time tells apart two blocks of one name, one deleted before the
    # other was made ("0": a block made before blocks kept their times).
    created = time_of(block_created_at) if block_created_at is not None else "0"
    return f"BlockHistory#{_part('block name', block)}#{created}#"


def core_memory_change(
    agent_id: str, block: str, block_created_at: datetime | None, version: int
) -> Key:
    """The change that made `version` of a block's lines."""
    prefix = _block_history_prefix(agent_id, block, block_created_at)
    return Key(agent_partition(agent_id), f"{prefix}{version:0{_BLOCK_VERSION_DIGITS}d}")


def core_memory_changes_of(agent_id: str, block: str, block_created_at: datetime | None) -> Query:
    """A block's line history, in version order (reversed: newest first)."""
    prefix = _block_history_prefix(agent_id, block, block_created_at)
    return agent_partition(agent_id), Sk.begins_with(prefix)


def archival(agent_id: str, ts: str, memory_id: str) -> Key:
    return Key(
        agent_partition(agent_id),
        f"Archival#{_part('timestamp', ts)}#{_part('memory id', memory_id)}",
    )


def archival_of(agent_id: str) -> Query:
    return agent_partition(agent_id), Sk.begins_with("Archival#")


def archival_hash_guard(agent_id: str, content_hash: str) -> Key:
    return Key(agent_partition(agent_id), f"ArchivalHash#{_part('content hash', content_hash)}")


def deleted_archival(agent_id: str, memory_id: str) -> Key:
    """A deleted memory's copy while it can be restored. `ArchivalDeleted#` sorts outside
    both `Archival#` (what search and export read) and the block range
    (`blocks_and_warnings_of`), so neither ever reads it."""
    return Key(agent_partition(agent_id), f"ArchivalDeleted#{_part('memory id', memory_id)}")


def capacity_warning(agent_id: str, block: str) -> Key:
    return Key(agent_partition(agent_id), f"CapacityWarning#{_part('block name', block)}")


def blocks_and_warnings_of(agent_id: str) -> Query:
    """An agent's warning counts, block lines and block definitions in one query: their
    sort keys lie next to each other in its partition (CapacityWarning#, CoreMemory#,
    MemoryBlockDef#), no other kind between them (tests/store pins that)."""
    return agent_partition(agent_id), Sk.between("CapacityWarning#", "MemoryBlockDef$")


# --- search --------------------------------------------------------------------------------

_VERSION_DIGITS = 12  # zero-padded, so text order is number order


def message_recall(agent_id: str, ts: str, message_id: str) -> Key:
    return Key(
        agent_partition(agent_id),
        f"Recall#{_part('timestamp', ts)}#{_part('message id', message_id)}",
    )


def message_recall_of(agent_id: str, message_key: Key) -> Key:
    """The searchable copy of the message with this key: same time and id."""
    _, ts, message_id = message_key.sk.split("#", 2)
    return message_recall(agent_id, ts, message_id)


def message_recalls_of(agent_id: str) -> Query:
    return agent_partition(agent_id), Sk.begins_with("Recall#")


# --- documents -----------------------------------------------------------------------------
# Their sort keys start after `MemoryBlockDef$`, outside the range a turn reads
# (`blocks_and_warnings_of`).

_PASSAGE_DIGITS = 6  # zero-padded, so text order is a document's reading order


def document(agent_id: str, document_id: str) -> Key:
    return Key(agent_partition(agent_id), f"Upload#{_part('document id', document_id)}")


def documents_of(agent_id: str) -> Query:
    return agent_partition(agent_id), Sk.begins_with("Upload#")


def document_hash_guard(agent_id: str, content_hash: str) -> Key:
    return Key(agent_partition(agent_id), f"UploadHash#{_part('content hash', content_hash)}")


def document_text(agent_id: str, document_id: str, n: int) -> Key:
    return Key(
        agent_partition(agent_id),
        f"UploadText#{_part('document id', document_id)}#{n:0{_PASSAGE_DIGITS}d}",
    )


def document_texts_of(agent_id: str, document_id: str) -> Query:
    return agent_partition(agent_id), Sk.begins_with(
        f"UploadText#{_part('document id', document_id)}#"
    )


def passage(agent_id: str, document_id: str, n: int) -> Key:
    return Key(
        agent_partition(agent_id),
        f"Passage#{_part('document id', document_id)}#{n:0{_PASSAGE_DIGITS}d}",
    )


def passages_of(agent_id: str) -> Query:
    """Every passage of every document of the agent: what its search index loads."""
    return agent_partition(agent_id), Sk.begins_with("Passage#")


def passages_of_document(agent_id: str, document_id: str) -> Query:
    return agent_partition(agent_id), Sk.begins_with(
        f"Passage#{_part('document id', document_id)}#"
    )


def search_version(agent_id: str) -> Key:
    return Key(agent_partition(agent_id), "SearchVersion")


def search_change(agent_id: str, version: int) -> Key:
    return Key(agent_partition(agent_id), f"SearchChange#{version:0{_VERSION_DIGITS}d}")


def search_changes_between(agent_id: str, first: int, last: int) -> Query:
    """Changes `first` to `last`, both included."""
    low = search_change(agent_id, first).sk
    high = search_change(agent_id, last).sk
    return agent_partition(agent_id), Sk.between(low, high)


# --- runs ----------------------------------------------------------------------------------

_EVENT_DIGITS = 9
LIVE_RUN_SHARDS = 16  # spread the turns running at once over several partitions


def run_partition(run_id: str) -> str:
    return f"Run#{_part('run id', run_id)}"


def run(run_id: str) -> Key:
    # "Run" sorts after every "Events#…": one query from an event on reads the new
    # batches and then the run's state.
    return Key(run_partition(run_id), "Run")


def run_events(run_id: str, first: int) -> Key:
    return Key(run_partition(run_id), f"Events#{first:0{_EVENT_DIGITS}d}")


def run_events_from(run_id: str, first: int) -> Query:
    """The batches starting at event `first` or later, then the run itself."""
    return run_partition(run_id), Sk.ge(f"Events#{first:0{_EVENT_DIGITS}d}")


def run_events_of(run_id: str) -> Query:
    return run_partition(run_id), Sk.begins_with("Events#")


def live_runs(shard: int) -> str:
    return f"LiveRuns#{shard}"


def live_run(run_id: str) -> Key:
    shard = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:2]) % LIVE_RUN_SHARDS
    return Key(live_runs(shard), f"Run#{_part('run id', run_id)}")


# --- seed 004: subjects and memory runs -------------------------------------------------

PENDING_MEMORY_RUN_SHARDS = 16


def subject(email: str, user_id: str) -> Key:
    """Seed 004's `user_id`, a client's name, resolved inside its owner's partition."""
    return Key(user_partition(email), f"Subject#{_part('subject id', user_id)}")


def memory_run(agent_id: str, run_id: str) -> Key:
    return Key(agent_partition(agent_id), f"MemoryRun#{_part('run id', run_id)}")


def memory_runs_of(agent_id: str) -> Query:
    return agent_partition(agent_id), Sk.begins_with("MemoryRun#")


def memory_run_queued(agent_id: str, ts: str, run_id: str) -> Key:
    return Key(
        agent_partition(agent_id),
        f"MemoryRunQueue#{_part('timestamp', ts)}#{_part('run id', run_id)}",
    )


def memory_runs_queued(agent_id: str) -> Query:
    """The subject's runs not ended yet, oldest first."""
    return agent_partition(agent_id), Sk.begins_with("MemoryRunQueue#")


def memory_lease(agent_id: str) -> Key:
    return Key(agent_partition(agent_id), "MemoryLease")


def pending_memory_runs(shard: int) -> str:
    return f"PendingMemoryRuns#{shard}"


def pending_memory_run(run_id: str) -> Key:
    digest = hashlib.sha256(run_id.encode()).digest()[:2]
    shard = int.from_bytes(digest) % PENDING_MEMORY_RUN_SHARDS
    return Key(pending_memory_runs(shard), f"MemoryRun#{_part('run id', run_id)}")


def schema_version() -> Key:
    return Key("Schema", "Version")
