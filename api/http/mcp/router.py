"""The protected-resource metadata (RFC 9728) that a 401 from /mcp points to: what an MCP
client reads to learn that this endpoint takes our bearer tokens."""

from fastapi import Request

from api.http.deps.app import SettingsDep
from api.http.mcp.auth import METADATA_PATH, base_url
from api.http.mcp.schemas import ProtectedResource
from api.http.route_filter import Router

router = Router(tags=["mcp"])


@router.get(METADATA_PATH, operation_id="mcp_protected_resource")
async def protected_resource(request: Request, settings: SettingsDep) -> ProtectedResource:
    """Where the MCP endpoint is, that it takes a bearer token in the header, and where its
    documentation is (the token: an API key from POST /auth/api-keys, or the access token
    of a signed-in session; no OAuth server issues them, so none is named)."""
    base = base_url(settings, request)
    return ProtectedResource(resource=f"{base}/mcp", resource_documentation=f"{base}/docs")
