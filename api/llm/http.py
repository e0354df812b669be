"""What the provider SDKs send through: aiohttp, by the adapter each SDK ships for it
(`DefaultAioHttpClient`, the SDKs' own "improved concurrency" option).

httpx's default transport parses a streamed answer in Python (h11 over httpcore over
anyio, a timeout scope and several generators per read): about 70 µs of CPU per chunk
here, against about 25 µs through aiohttp's C parser (2.8 against 1.0 ms for a 40-chunk
stream, 50 at a time), and its pool walks every connection when a request starts and
ends. The SDKs keep making the requests (auth, retries, errors), as before."""

import aiohttp
import httpx2


def refused(e: BaseException) -> bool:
    """Whether an SDK's timeout was a refused or dropped connection: openai's copy of the
    aiohttp adapter turns every `aiohttp.ClientConnectionError` into `ConnectTimeout`
    (Anthropic's copy maps these to `ConnectError`), which the SDK raises as its
    `APITimeoutError`, each keeping the one before as its `__cause__`. Without this, a
    provider that is down reads as one that is slow (504 instead of 502). aiohttp's own
    timeouts are `TimeoutError`s and stay so."""
    sent = e.__cause__
    cause = sent.__cause__ if isinstance(sent, httpx2.ConnectTimeout) else None
    return isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError)
