"""One TLS context for the process's outgoing HTTPS clients."""

import ssl

import httpx2

_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """One context for every outgoing client (a provider's per user, Google's per sign-in):
    making one reads the CA bundle, tens of milliseconds that each client would repeat."""
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = httpx2.create_ssl_context()
    return _ssl_context
