"""The protected-resource metadata document (RFC 9728), written here rather than with the
SDK's model so that serving it does not import the SDK (seconds of a cold start)."""

from pydantic import Field

from api.kit.model import ApiModel


class ProtectedResource(ApiModel):
    """No `authorization_servers` (optional in RFC 9728): the tokens are API keys and this
    server's own access tokens, and no OAuth authorization server issues them (neither
    this server, which serves no RFC 8414 metadata, nor Google, whose tokens /mcp does not
    take). Naming one would send a client into an OAuth flow that cannot succeed; the
    documentation says how to get an API key (docs/mcp.md)."""

    resource: str = Field(description="The MCP endpoint these tokens are for.")
    bearer_methods_supported: list[str] = Field(default_factory=lambda: ["header"])
    resource_name: str = "Agent memory"
    resource_documentation: str | None = None
