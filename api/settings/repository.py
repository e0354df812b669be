"""Provider settings in the table: the only module that reads or writes them."""

from api.settings.models import ProviderSettings
from api.store import keys
from api.store.table import AttrEquals, Table


async def get(table: Table, email: str, provider: str) -> ProviderSettings | None:
    item = await table.get(keys.provider_settings(email, provider))
    return ProviderSettings.from_dynamo_item(item) if item else None


async def list_for(table: Table, email: str) -> list[ProviderSettings]:
    pk, sk = keys.provider_settings_of(email)
    page = await table.query(pk, sk=sk)
    return [ProviderSettings.from_dynamo_item(item) for item in page.items]


async def save(table: Table, settings: ProviderSettings) -> None:
    await table.put(settings.to_dynamo_item())


async def replace_ciphertext(table: Table, old: ProviderSettings, new: ProviderSettings) -> None:
    """Rewrite only if nobody changed the credentials meanwhile (ConditionFailed if so)."""
    await table.put(
        new.to_dynamo_item(),
        condition=AttrEquals("encrypted_credentials", old.encrypted_credentials),
    )


async def delete(table: Table, email: str, provider: str) -> None:
    await table.delete(keys.provider_settings(email, provider))


async def encrypted_with(
    table: Table, key_id: str, cursor: str | None = None
) -> tuple[list[ProviderSettings], str | None]:
    page = await table.query(
        keys.provider_settings_by_key(key_id), index=keys.GSI1, limit=100, cursor=cursor
    )
    return [ProviderSettings.from_dynamo_item(i) for i in page.items], page.cursor
