"""Sign-in sessions, refresh tokens, API keys and used nonces in the table."""

from api.auth.models import ApiKey, ApiKeyRef, AuthSession, OAuthNonce, RefreshToken
from api.store import keys
from api.store.table import (
    AttrEquals,
    Check,
    Delete,
    ItemAbsent,
    ItemExists,
    Put,
    Table,
    Update,
)

ROTATION = "rotation"  # the label of a rotation's write of the token it uses up


class AuthRepository:
    """Sign-in sessions with their refresh tokens, API keys, and the nonces already used."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def start_session(self, session: AuthSession, token: RefreshToken) -> None:
        await self.table.transact_write(
            [
                Put(session.to_dynamo_item(), condition=ItemAbsent()),
                Put(token.to_dynamo_item(), condition=ItemAbsent()),
            ]
        )

    async def get_refresh_token(self, token_hash: str) -> RefreshToken | None:
        item = await self.table.get(keys.refresh_token(token_hash))
        return RefreshToken.from_dynamo_item(item) if item else None

    async def get_session(self, family_id: str) -> AuthSession | None:
        item = await self.table.get(keys.auth_session(family_id))
        return AuthSession.from_dynamo_item(item) if item else None

    async def rotate(self, old: RefreshToken, new: RefreshToken, at: float, successor: str) -> None:
        """Old token marked used (with its sealed `successor`) and new one stored, only while
        both token and family are live: of two concurrent rotations of one token, one loses
        (TransactionCancelled, with ROTATION failed)."""
        await self.table.transact_write(
            [
                Update(
                    old.key(),
                    set={"rotated": True, "rotated_at": at, "successor": successor},
                    condition=AttrEquals("rotated", False),
                    label=ROTATION,
                ),
                Put(new.to_dynamo_item(), condition=ItemAbsent()),
                Check(keys.auth_session(old.family_id), AttrEquals("revoked", False)),
            ]
        )

    async def revoke_session(self, family_id: str) -> None:
        await self.table.update(
            keys.auth_session(family_id), set={"revoked": True}, condition=ItemExists()
        )

    async def create_api_key(self, key: ApiKey, ref: ApiKeyRef) -> None:
        await self.table.transact_write(
            [
                Put(key.to_dynamo_item(), condition=ItemAbsent()),
                Put(ref.to_dynamo_item(), condition=ItemAbsent()),
            ]
        )

    async def list_api_keys(self, email: str) -> list[tuple[ApiKeyRef, ApiKey | None]]:
        pk, sk = keys.api_key_refs_of(email)
        refs = [ApiKeyRef.from_dynamo_item(i) for i in (await self.table.query(pk, sk=sk)).items]
        found = await self.table.batch_get([keys.api_key(r.key_hash) for r in refs])
        by_hash = {k.key_hash: k for k in (ApiKey.from_dynamo_item(i) for i in found)}
        return [(ref, by_hash.get(ref.key_hash)) for ref in refs]

    async def get_api_key_ref(self, email: str, key_id: str) -> ApiKeyRef | None:
        item = await self.table.get(keys.api_key_ref(email, key_id))
        return ApiKeyRef.from_dynamo_item(item) if item else None

    async def get_api_key(self, key_hash: str) -> ApiKey | None:
        item = await self.table.get(keys.api_key(key_hash))
        return ApiKey.from_dynamo_item(item) if item else None

    async def touch_api_key(self, key: ApiKey) -> None:
        assert key.last_used_at is not None
        await self.table.update(
            key.key(), set={"last_used_at": key.last_used_at.isoformat()}, condition=ItemExists()
        )

    async def delete_api_key(self, ref: ApiKeyRef) -> None:
        await self.table.transact_write([Delete(keys.api_key(ref.key_hash)), Delete(ref.key())])

    async def record_nonce(self, nonce: OAuthNonce) -> None:
        """Raises ConditionFailed when the nonce was seen before."""
        await self.table.put(nonce.to_dynamo_item(), condition=ItemAbsent())
