"""Provider settings in the table: the only module that reads or writes them."""

from api.settings.models import ProviderSettings
from api.store import keys
from api.store.table import AttrEquals, Table


class ProviderSettingsRepository:
    """A user's provider settings, and those encrypted with a given key."""

    __slots__ = ("table",)

    def __init__(self, table: Table) -> None:
        self.table = table

    async def get(self, email: str, provider: str) -> ProviderSettings | None:
        item = await self.table.get(keys.provider_settings(email, provider))
        return ProviderSettings.from_dynamo_item(item) if item else None

    async def list_for(self, email: str) -> list[ProviderSettings]:
        pk, sk = keys.provider_settings_of(email)
        page = await self.table.query(pk, sk=sk)
        return [ProviderSettings.from_dynamo_item(item) for item in page.items]

    async def save(self, settings: ProviderSettings) -> None:
        await self.table.put(settings.to_dynamo_item())

    async def replace_ciphertext(self, old: ProviderSettings, new: ProviderSettings) -> None:
        """Rewrite only if nobody changed the credentials meanwhile (ConditionFailed if so)."""
        await self.table.put(
            new.to_dynamo_item(),
            condition=AttrEquals("encrypted_credentials", old.encrypted_credentials),
        )

    async def delete(self, email: str, provider: str) -> None:
        await self.table.delete(keys.provider_settings(email, provider))

    async def encrypted_with(
        self, key_id: str, cursor: str | None = None
    ) -> tuple[list[ProviderSettings], str | None]:
        page = await self.table.query(
            keys.provider_settings_by_key(key_id), index=keys.GSI1, limit=100, cursor=cursor
        )
        return [ProviderSettings.from_dynamo_item(i) for i in page.items], page.cursor
