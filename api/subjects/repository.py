"""Subjects in the table: the lookup item in the caller's partition."""

from api.store import keys
from api.store.table import AttrEquals, Check, ConditionFailed, Table
from api.subjects.models import Subject

# The label of the subject's lookup (its write, or `still_names`' check) in a transaction.
SUBJECT = "subject"


def still_names(subject: Subject) -> Check:
    """A transaction's check that the subject still leads to the same agent (not deleted
    or reset meanwhile)."""
    return Check(subject.key(), AttrEquals("agent_id", subject.agent_id), label=SUBJECT)


class SubjectRepository:
    """Subjects: the lookup item naming the agent that holds a user_id's memory."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def get(self, email: str, user_id: str) -> Subject | None:
        item = await self.table.get(keys.subject(email, user_id))
        return Subject.from_dynamo_item(item) if item else None

    async def delete(self, subject: Subject) -> bool:
        """The lookup, if it still names the subject's agent; False when it did not."""
        try:
            await self.table.delete(
                subject.key(), condition=AttrEquals("agent_id", subject.agent_id)
            )
        except ConditionFailed:
            return False
        return True
