"""Users in the table: the only module that reads or writes User and GoogleSubject items."""

from api.store import keys
from api.store.table import ItemAbsent, Put, Table
from api.users.models import GoogleSubject, User

USER = "user"  # the label of a new user's write, for reading why its transaction failed


class UserRepository:
    """Users and the Google subjects that find them."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def get(self, email: str) -> User | None:
        item = await self.table.get(keys.user(email))
        return User.from_dynamo_item(item) if item else None

    async def email_for_google_subject(self, sub: str) -> str | None:
        item = await self.table.get(keys.google_subject(sub))
        return GoogleSubject.from_dynamo_item(item).email if item else None

    async def save(self, user: User) -> None:
        await self.table.put(user.to_dynamo_item())

    async def create_with_google_subject(self, user: User, sub: str) -> None:
        """A new user and the subject that finds it, together; fails if either exists (USER:
        the user does)."""
        await self.table.transact_write(
            [
                Put(user.to_dynamo_item(), condition=ItemAbsent(), label=USER),
                Put(
                    GoogleSubject(sub=sub, email=user.email).to_dynamo_item(),
                    condition=ItemAbsent(),
                ),
            ]
        )

    async def create_if_absent(self, user: User) -> None:
        await self.table.put(user.to_dynamo_item(), condition=ItemAbsent())
