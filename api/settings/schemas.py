from datetime import datetime
from typing import Any

from pydantic import BaseModel

from api.kit.forms import FormField


class ProviderForm(BaseModel):
    name: str
    label: str
    configurable: bool
    fields: list[FormField]


class ProvidersSchema(BaseModel):
    providers: list[ProviderForm]


class ProviderSettingsOut(BaseModel):
    provider: str
    label: str
    values: dict[str, Any]  # secrets masked
    updated_at: datetime


class ProviderTestOut(BaseModel):
    ok: bool
    models: list[str]
