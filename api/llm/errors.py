"""What a provider's failure means to the person who configured it."""

import re
from collections.abc import Sequence

from api.errors import AppError


class ProviderError(AppError):
    """Raised by every adapter for every provider failure. Messages are ours, written for
    the person who configured the provider; they never quote credentials."""

    status_code = 502
    code = "provider_error"
    public = True  # not our internals: the person needs to read it

    def scrubbed(self, secrets: Sequence[str]) -> "ProviderError":
        """The same error with the provider's credentials taken out of its message: a
        provider may quote the key it refused, and this message reaches the client, the
        log and the stream."""
        self.message = scrub(self.message, secrets)
        self.args = (self.message,)
        return self


class ProviderAuthFailed(ProviderError):
    status_code = 400
    code = "provider_auth_failed"


class ProviderRateLimited(ProviderError):
    status_code = 429
    code = "provider_rate_limited"


class ProviderTimeout(ProviderError):
    status_code = 504
    code = "provider_timeout"


class ProviderUnavailable(ProviderError):
    status_code = 502
    code = "provider_unavailable"


class ProviderRejected(ProviderError):
    """The provider refused the request itself (an unknown model, a bad parameter)."""

    status_code = 400
    code = "provider_rejected"


REDACTED = "[redacted]"
_PIECE = 8  # a run this long of a secret, quoted alone, gives it away


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` without any of `secrets`, whole or a piece of it as long as _PIECE."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    pieces = [s for s in secrets if len(s) >= _PIECE]
    if not pieces:
        return text

    def hide(found: re.Match[str]) -> str:
        word = found.group(0)
        core = word.strip(".…!?")  # "...abcd1234." quotes the key's end
        if len(core) >= _PIECE and any(core in secret for secret in pieces):
            return word.replace(core, REDACTED)
        return word

    return re.sub(r"[^\s'\"`,;:()\[\]{}<>]+", hide, text)


def brief(text: object, limit: int = 300) -> str:
    """A provider's own message, shortened, for quoting in ours."""
    message = " ".join(str(text).split())
    return message if len(message) <= limit else message[: limit - 1] + "…"


# What calling a user's LLM provider can end with (for routes' `errors(...)`).
PROVIDER_FAILURES = (
    ProviderAuthFailed,
    ProviderRejected,
    ProviderRateLimited,
    ProviderUnavailable,
    ProviderTimeout,
)
