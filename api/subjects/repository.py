"""Subjects in the table: the lookup item in the caller's partition."""

from api.store import keys
from api.store.table import AttrEquals, Check, ConditionFailed, Table
from api.subjects.models import Subject


async def get(table: Table, email: str, user_id: str) -> Subject | None:
    item = await table.get(keys.subject(email, user_id))
    return Subject.from_dynamo_item(item) if item else None


# The label of the subject's lookup (its write, or `still_names`' check) in a transaction.
SUBJECT = "subject"


def still_names(subject: Subject) -> Check:
    """A transaction's check that the subject still leads to the same agent (not deleted
    or reset meanwhile)."""
    return Check(subject.key(), AttrEquals("agent_id", subject.agent_id), label=SUBJECT)


async def delete(table: Table, subject: Subject) -> bool:
    """The lookup, if it still names the subject's agent; False when it did not."""
    try:
        await table.delete(subject.key(), condition=AttrEquals("agent_id", subject.agent_id))
    except ConditionFailed:
        return False
    return True
