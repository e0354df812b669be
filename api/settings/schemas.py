from datetime import datetime
from typing import Any

from api.kit.forms import FormField
from api.kit.model import ApiModel


class ProviderForm(ApiModel):
    name: str
    label: str
    configurable: bool
    fields: list[FormField]


class ProvidersSchema(ApiModel):
    providers: list[ProviderForm]


class ProviderSettingsOut(ApiModel):
    provider: str
    label: str
    values: dict[str, Any]  # secrets masked
    updated_at: datetime


class ProviderTestOut(ApiModel):
    ok: bool
    models: list[str]
