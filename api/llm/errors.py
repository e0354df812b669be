"""What a provider's failure means to the person who configured it."""

from api.errors import AppError


class ProviderError(AppError):
    """Raised by every adapter for every provider failure. Messages are ours, written for
    the person who configured the provider; they never quote credentials."""

    status_code = 502
    code = "provider_error"
    public = True  # not our internals: the person needs to read it


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


class ProviderBadResponse(ProviderError):
    """The provider answered something we cannot use, such as tool arguments that are not
    a JSON object."""

    status_code = 502
    code = "provider_bad_response"


def brief(text: object, limit: int = 300) -> str:
    """A provider's own message, shortened, for quoting in ours."""
    message = " ".join(str(text).split())
    return message if len(message) <= limit else message[: limit - 1] + "…"
