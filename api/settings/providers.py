"""The LLM providers a user can configure: what each needs (the pydantic model that both
validates the PUT and defines the form) and how to build its adapter."""

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import (
    ConfigDict,
    Field,
    HttpUrl,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from api.kit.model import ApiModel
from api.llm.offline import OfflineProvider
from api.llm.types import LLMProvider

AWS_REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$"  # ASCII digits: \d would admit any script's


def header_safe(value: str, what: str) -> str:
    """A value that travels in an HTTP header (a key, an organization): surrounding
    whitespace dropped (a pasted key often brings some), and refused if any character is
    one no header can carry. The error names the character and where it is, never the
    value."""
    value = value.strip()
    for position, char in enumerate(value, 1):
        if not " " <= char <= "~":
            name = unicodedata.name(char, "a control character").lower()
            raise ValueError(
                f"{what} holds {name} (U+{ord(char):04X}) at character {position}; it must "
                "be plain ASCII as the provider gave it"
            )
    return value


class Credentials(ApiModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator(
        "api_key", "secret_access_key", "organization", mode="before", check_fields=False
    )
    @classmethod
    def _header_safe(cls, value: object, info: ValidationInfo) -> object:
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, str):
            return header_safe(value, (info.field_name or "the value").replace("_", " "))
        return value

    # A secret kept from storage when a form leaves it empty, only while the field it
    # belongs with is unchanged (a new access key id needs its own secret).
    SECRET_BELONGS_TO: ClassVar[dict[str, str]] = {}

    def uses_server_identity(self) -> bool:
        """Whether calls would run on the server's own cloud identity, not the user's."""
        return False

    def url(self) -> str | None:
        """The address our servers will call, when the user chose it."""
        base_url = getattr(self, "base_url", None)
        return str(base_url) if base_url else None


class OpenAICredentials(Credentials):
    api_key: SecretStr = Field(title="API key", min_length=1, max_length=500)
    base_url: HttpUrl | None = Field(
        default=None,
        title="Base URL",
        description="Empty for OpenAI. Set it for an OpenAI-compatible server: Ollama, vLLM, "
        "LM Studio, OpenRouter, Gemini's OpenAI endpoint.",
    )
    organization: str | None = Field(default=None, title="Organization", max_length=100)


class AnthropicCredentials(Credentials):
    api_key: SecretStr = Field(title="API key", min_length=1, max_length=500)
    base_url: HttpUrl | None = Field(
        default=None,
        title="Base URL",
        description="Empty for Anthropic's API; set it for a proxy or gateway.",
    )


class BedrockCredentials(Credentials):
    region: str = Field(default="us-east-1", title="AWS region", pattern=AWS_REGION)
    access_key_id: str | None = Field(
        default=None,
        title="Access key id",
        pattern=r"^[A-Z0-9]{16,128}$",
        description="Empty to use the server's own AWS role (in local mode only).",
    )
    secret_access_key: SecretStr | None = Field(
        default=None, title="Secret access key", min_length=16, max_length=128
    )

    SECRET_BELONGS_TO: ClassVar[dict[str, str]] = {"secret_access_key": "access_key_id"}

    def uses_server_identity(self) -> bool:
        return self.access_key_id is None

    @model_validator(mode="after")
    def _pair(self) -> "BedrockCredentials":
        if (self.access_key_id is None) != (self.secret_access_key is None):
            raise ValueError("give both the access key id and the secret access key, or neither")
        return self


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    label: str
    credentials: type[Credentials] | None  # None: nothing to configure
    build: Callable[[Any], LLMProvider]


# Each SDK is imported when a provider of its kind is first built, not at start: most
# servers use one provider or none, and the SDKs cost about a second and 50 MB to import.


def _openai(c: OpenAICredentials) -> LLMProvider:
    from api.llm.openai import OpenAIProvider

    return OpenAIProvider(
        api_key=c.api_key.get_secret_value(), base_url=c.url(), organization=c.organization
    )


def _anthropic(c: AnthropicCredentials) -> LLMProvider:
    from api.llm.anthropic import AnthropicProvider

    return AnthropicProvider(api_key=c.api_key.get_secret_value(), base_url=c.url())


def _bedrock(c: BedrockCredentials) -> LLMProvider:
    from api.llm.bedrock import BedrockProvider

    return BedrockProvider(
        region=c.region,
        access_key_id=c.access_key_id,
        secret_access_key=_secret(c.secret_access_key),
    )


PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in [
        ProviderSpec(
            "openai", "OpenAI (or an OpenAI-compatible server)", OpenAICredentials, _openai
        ),
        ProviderSpec("anthropic", "Anthropic", AnthropicCredentials, _anthropic),
        ProviderSpec("bedrock", "AWS Bedrock", BedrockCredentials, _bedrock),
        ProviderSpec(
            "offline", "Offline demo model (no network)", None, lambda _: OfflineProvider()
        ),
    ]
}
