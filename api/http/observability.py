"""GET /metrics: the Prometheus metrics, as METRICS allows: `off` (404, as if absent),
`loopback` (the default: only a peer on this machine, and not one relaying for another, so
a proxy on the same host does not expose it), or `token` (a bearer METRICS_TOKEN)."""

import asyncio
import hmac
import ipaddress

from fastapi import Request
from fastapi.responses import Response

from api.config import Settings
from api.errors import AppError, NotFound
from api.http.deps.app import SettingsDep
from api.http.route_filter import Router
from api.observability import metrics

router = Router(tags=["operations"])

# Set by a proxy relaying someone else's request: such a request is not a local one, even
# when the proxy itself connects from loopback.
FORWARDED = (b"forwarded", b"x-forwarded-for", b"x-real-ip")


class MetricsForbidden(AppError):
    status_code = 403
    code = "metrics_forbidden"


class MetricsUnauthorized(AppError):
    status_code = 401
    code = "metrics_unauthorized"

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="metrics"'}


@router.get("/metrics", operation_id="observability_scrape", include_in_schema=False)
async def scrape(request: Request, settings: SettingsDep) -> Response:
    allow(request, settings)
    body = await asyncio.to_thread(metrics.render)
    return Response(body, media_type=metrics.CONTENT_TYPE, headers={"Cache-Control": "no-store"})


def allow(request: Request, settings: Settings) -> None:
    """Raise unless METRICS lets this request read the metrics."""
    if settings.metrics == "off":
        raise NotFound("Metrics are off on this server (METRICS=off).")
    if settings.metrics == "loopback":
        if not _loopback_peer(request):
            raise MetricsForbidden(
                "Metrics are served to this machine only (METRICS=loopback); use "
                "METRICS=token to scrape them from elsewhere."
            )
        return
    token = settings.metrics_token.get_secret_value().encode() if settings.metrics_token else b""
    scheme, _, sent = request.headers.get("authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer" or not hmac.compare_digest(sent.encode(), token):
        raise MetricsUnauthorized("Send the metrics token as 'Authorization: Bearer ...'.")


def _loopback_peer(request: Request) -> bool:
    if any(name in FORWARDED for name, _ in request.scope["headers"]):
        return False
    peer = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:  # not an address (a Unix socket, a test client)
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback
