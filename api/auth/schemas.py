from datetime import datetime
from typing import Literal

from pydantic import Field

from api.kit.model import ApiModel


class AccessTokenOut(ApiModel):
    access_token: str
    token_type: Literal["bearer"] = "bearer"  # noqa: S105 (a token type, not a secret)
    expires_in: int


class ApiKeyCreate(ApiModel):
    name: str = Field(min_length=1, max_length=100, description="What the key is for, e.g. n8n")


class ApiKeyOut(ApiModel):
    id: str
    name: str
    prefix: str = Field(description="The key's first characters, to tell keys apart")
    created_at: datetime
    last_used_at: datetime | None = None


class ApiKeyCreated(ApiKeyOut):
    key: str = Field(description="The secret: shown once, now, and never again")
