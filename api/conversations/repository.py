"""Conversations and their messages in the table."""

from api.store import keys
from api.store.table import Key, SkCondition, Table


async def _keys_of(
    table: Table, pk: str, sk: SkCondition, *, index: str | None = None
) -> list[Key]:
    found: list[Key] = []
    cursor: str | None = None
    while True:
        page = await table.query(pk, sk=sk, index=index, limit=500, cursor=cursor)
        found += [Key(item["pk"], item["sk"]) for item in page.items]
        if page.cursor is None:
            return found
        cursor = page.cursor


async def delete_for_agent(table: Table, email: str, agent_id: str) -> int:
    """Every conversation of an agent, its messages and its session lookups; how many
    conversations there were."""
    found = await _keys_of(table, *keys.conversations_of_agent(agent_id), index=keys.GSI1)
    # The index groups by agent id only: keep what lives in this owner's partition.
    conversations = [k for k in found if k.pk == keys.conversations_partition(email)]
    doomed = list(conversations)
    for conversation in conversations:
        conversation_id = keys.conversation_id_of(conversation.sk)
        doomed += await _keys_of(table, *keys.messages_of(conversation_id))
    doomed += await _keys_of(table, *keys.session_lookups_of(email, agent_id))
    await table.batch_write(deletes=doomed)
    return len(conversations)
