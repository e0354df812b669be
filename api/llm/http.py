"""What the provider SDKs send through: aiohttp, by the adapter each SDK ships for it
(`DefaultAioHttpClient`, the SDKs' own "improved concurrency" option).

httpx's default transport parses a streamed answer in Python (h11 over httpcore over
anyio, a timeout scope and several generators per read): about 70 µs of CPU per chunk
here, against about 25 µs through aiohttp's C parser (2.8 against 1.0 ms for a 40-chunk
stream, 50 at a time), and its pool walks every connection when a request starts and
ends. The SDKs keep making the requests (auth, retries, errors), as before."""

import ssl
from typing import Any

import aiohttp
import httpx2

_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """One context for every provider client: making one reads the CA bundle (tens of
    milliseconds), which a client per provider per user would otherwise repeat."""
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = httpx2.create_ssl_context()
    return _ssl_context


def _as_sent(e: httpx2.ConnectTimeout) -> httpx2.TimeoutException | httpx2.ConnectError:
    """openai's copy of the aiohttp adapter turns every `aiohttp.ClientConnectionError`
    into `ConnectTimeout`, even a refused or dropped connection (Anthropic's copy maps
    these to `ConnectError`): without this, a provider that is down reads as one that is
    slow (504 instead of 502). aiohttp's own timeouts are `TimeoutError`s and stay so."""
    cause = e.__cause__
    if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError):
        return httpx2.ConnectError(str(e))
    return e


class _ConnectErrorsKept(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except httpx2.ConnectTimeout as e:
            raise _as_sent(e) from e.__cause__
        # A connection lost within the body already arrives as `ReadError`.
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class ConnectErrorsKept(httpx2.AsyncClient):
    """Put first in the bases of an SDK's aiohttp client whose adapter reports a refused
    or dropped connection as a timeout: every transport it makes (direct and proxied)
    reports them as `ConnectError` again."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return _ConnectErrorsKept(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        return _ConnectErrorsKept(super()._init_proxy_transport(*args, **kwargs))
