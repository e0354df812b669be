"""The transport the provider SDKs send through: several connection pools instead of one.

httpcore's pool walks every one of its connections when a request starts and again when
its response ends (and probes the socket of each idle one), so with hundreds of streams
open at once each request pays for all the others: about half of the HTTP client's time
at 500 concurrent turns (bench/load.py). Requests go to the pools in turn, so each walk
covers a fraction of the connections; the pools themselves are httpcore's own, unchanged.
The SDKs' own limits (1,000 connections, 100 kept alive) are shared out among them."""

import itertools
import math
import ssl
import urllib.request

import httpx2

POOLS = 8
MAX_CONNECTIONS = 1000  # the OpenAI and Anthropic SDKs' defaults, in all
MAX_KEEPALIVE = 100
KEEPALIVE_SECONDS = 5.0

_ssl_context: ssl.SSLContext | None = None


class PooledTransport(httpx2.AsyncBaseTransport):
    def __init__(self, pools: int = POOLS) -> None:
        limits = httpx2.Limits(
            max_connections=math.ceil(MAX_CONNECTIONS / pools),
            max_keepalive_connections=math.ceil(MAX_KEEPALIVE / pools),
            keepalive_expiry=KEEPALIVE_SECONDS,
        )
        verify = _shared_ssl_context()
        self.pools = [httpx2.AsyncHTTPTransport(verify=verify, limits=limits) for _ in range(pools)]
        self._turns = itertools.cycle(self.pools)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await next(self._turns).handle_async_request(request)

    async def aclose(self) -> None:
        for pool in self.pools:
            await pool.aclose()


def provider_transport() -> PooledTransport | None:
    """The transport for a provider's SDK client; None (the SDK's own) when the
    environment names a proxy, which only the client's own transport would honour."""
    if urllib.request.getproxies():
        return None
    return PooledTransport()


def _shared_ssl_context() -> ssl.SSLContext:
    """One context for every pool and provider: making one reads the CA bundle (tens of
    milliseconds), which a pool per provider per user would otherwise repeat."""
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = httpx2.create_ssl_context()
    return _ssl_context
