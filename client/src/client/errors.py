"""The errors `learning()` raises: only on entry, where the user can still act on them. A
memory server that fails during a call never fails the call (it is logged and counted)."""

START_HINT = (
    "Start the memory server (in the agent-memory repository: `./dev serve`, or "
    "`agent-memory serve --port 8283`, or `uvicorn api.main:app --port 8283`), or point "
    "learning() at a running one with server_url=... or MEMORY_SERVER_URL."
)


class MemoryServerError(RuntimeError):
    """The memory server could not be used. `status` and `code` are the server's answer,
    when it gave one (`code` is its stable error code, such as `invalid_api_key`)."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


class MemoryServerUnavailable(MemoryServerError):
    """Nothing answered at the server URL, or what answered is not a healthy memory server."""
