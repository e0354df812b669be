"""The protected-resource metadata document (RFC 9728), written here rather than with the
SDK's model so that serving it does not import the SDK (seconds of a cold start)."""

from pydantic import BaseModel, Field


class ProtectedResource(BaseModel):
    resource: str = Field(description="The MCP endpoint these tokens are for.")
    authorization_servers: list[str] = Field(
        description="Who issues the tokens: this server (API keys, and access tokens after "
        "signing in)."
    )
    bearer_methods_supported: list[str] = ["header"]
    resource_name: str = "Agent memory"
    resource_documentation: str | None = None
