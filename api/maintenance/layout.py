"""The steps that upgrade what a table holds from one layout to the next, over the
repositories (`api/store/schema.py` counts the layouts and runs these at start-up).

Each step is safe to run twice and while serving (replicas starting together may both run
it): it only fills in what an item of the earlier layout lacks, under a condition that it
still lacks it."""

import asyncio
import functools
from collections.abc import Mapping
from datetime import datetime

from api.conversations.models import Conversation
from api.repositories import Repositories
from api.store.schema import Step

# Conversations whose last message is looked for at once: a scan's page is read in
# groups of this many concurrent queries.
AT_ONCE = 25


def steps(repos: Repositories) -> Mapping[int, Step]:
    """The steps by the layout each starts from."""
    return {1: functools.partial(record_activity, repos)}


async def record_activity(repos: Repositories) -> None:
    """Layout 1 to 2. A conversation stored before conversations kept their last activity
    gets it: its last message's time (its creation when it has none), which also becomes
    its place among its agent's conversations and its `updated_at` if later; an agent, its
    last use: the latest of its conversations' last messages. What a turn has written
    meanwhile is kept."""
    last_use: dict[tuple[str, str], datetime] = {}
    async for page in repos.conversations.of_earlier_layout():
        for start in range(0, len(page), AT_ONCE):
            group = page[start : start + AT_ONCE]
            lasts = await asyncio.gather(*(_last_message(repos, c) for c in group))
            await asyncio.gather(
                *(
                    repos.conversations.set_earlier_activity(
                        c, max(c.created_at, last or c.created_at)
                    )
                    for c, last in zip(group, lasts, strict=True)
                )
            )
            for c, last in zip(group, lasts, strict=True):
                agent = (c.created_by, c.agent_id)
                if last is not None and (agent not in last_use or last > last_use[agent]):
                    last_use[agent] = last
    for (email, agent_id), at in last_use.items():
        await repos.agents.set_earlier_use(email, agent_id, at)


async def _last_message(repos: Repositories, conversation: Conversation) -> datetime | None:
    newest, _ = await repos.messages.newest_first(
        conversation.conversation_id, limit=1, cursor=None
    )
    return newest[0].created_at if newest else None
