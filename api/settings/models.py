from datetime import datetime

from api.store import keys
from api.store.entity import Entity
from api.store.table import Key


class ProviderSettings(Entity):
    """Seed 000's ProviderSettings: the credentials are only ever stored encrypted."""

    ENTITY = keys.PROVIDER_SETTINGS

    user_email: str
    provider_name: str
    encrypted_credentials: str
    key_id: str
    updated_at: datetime

    def key(self) -> Key:
        return keys.provider_settings(self.user_email, self.provider_name)

    def index_keys(self) -> dict[str, str]:
        return keys.provider_settings_index(self.key_id, self.user_email, self.provider_name)
