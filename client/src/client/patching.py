"""The SDK methods learning() replaces, patched on their classes once for all contexts.

The patch is reference-counted: the first context to enter installs it, the last to leave
restores the originals. A patched method looks up the calling context's learning() (a
ContextVar: each thread has its own, an asyncio task inherits its creator's) and passes
the call through untouched when there is none, so a call outside every context, or from
a thread the context did not start in, is the SDK's own.

Only SDKs the program has imported when a context is entered are patched: import openai
or anthropic before entering learning()."""

import functools
import importlib
import inspect
import logging
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from client.apis import ANTHROPIC, CHAT, RESPONSES, Api

log = logging.getLogger(__name__)

Method = Callable[..., Any]
Kind = Literal["call", "acall", "stream_manager", "astream_manager"]
RAW_RESPONSE_HEADER = "x-stainless-raw-response"


class Deferred(Protocol):
    """A call's memory, still being fetched while the SDK builds the call's request: put
    into the request's body by the client's options hook, just before it is sent."""

    def apply(self, options: Any) -> Any: ...


class Session(Protocol):
    """What a patched method hands a call to (client.interceptor.Learning)."""

    def call(self, api: Api, original: Method, resource: object, args: Any, kwargs: Any) -> Any: ...

    async def acall(
        self, api: Api, original: Method, resource: object, args: Any, kwargs: Any
    ) -> Any: ...

    def stream_manager(
        self, api: Api, original: Method, resource: object, args: Any, kwargs: Any
    ) -> Any: ...

    def astream_manager(
        self, api: Api, original: Method, resource: object, args: Any, kwargs: Any
    ) -> Any: ...


active: ContextVar[Session | None] = ContextVar("agent_memory_learning", default=None)
# Set while a patched method hands a call to its session: a patched method reached again
# inside it (ours under another library's wrapper, patched over by us once more when a
# later context entered) calls its original, so one user call is intercepted once.
_intercepting: ContextVar[bool] = ContextVar("agent_memory_intercepting", default=False)
# Set while an intercepted call runs the SDK's method, when its memory is still on the way.
deferred: ContextVar[Deferred | None] = ContextVar("agent_memory_deferred", default=None)


@dataclass(frozen=True)
class Target:
    module: str
    owner: str
    method: str
    api: Api
    kind: Kind


_OPENAI_CHAT = "openai.resources.chat.completions.completions"
_OPENAI_RESPONSES = "openai.resources.responses.responses"
_ANTHROPIC = "anthropic.resources.messages.messages"
TARGETS = (
    Target(_OPENAI_CHAT, "Completions", "create", CHAT, "call"),
    Target(_OPENAI_CHAT, "AsyncCompletions", "create", CHAT, "acall"),
    Target(_OPENAI_RESPONSES, "Responses", "create", RESPONSES, "call"),
    Target(_OPENAI_RESPONSES, "AsyncResponses", "create", RESPONSES, "acall"),
    Target(_ANTHROPIC, "Messages", "create", ANTHROPIC, "call"),
    Target(_ANTHROPIC, "AsyncMessages", "create", ANTHROPIC, "acall"),
    Target(_ANTHROPIC, "Messages", "stream", ANTHROPIC, "stream_manager"),
    Target(_ANTHROPIC, "AsyncMessages", "stream", ANTHROPIC, "astream_manager"),
)

_lock = threading.Lock()
_users = 0
# (class, method name, original function, the wrapper put in its place)
_patched: list[tuple[type, str, Method, Method]] = []
# SDK clients whose options hook was wrapped (`hook`), held weakly: a program may make a
# client per request inside one long context, and each must be freed with its connections.
_hooked: "weakref.WeakSet[object]" = weakref.WeakSet()
HOOK = "_prepare_options"


def install() -> int:
    """One more context uses the patch; the methods of every SDK the program has imported
    are patched, if they are not already. The number of methods patched (0 when the
    program imported neither SDK). An SDK is never imported here: a program that uses
    only one does not pay for loading the other."""
    global _users
    with _lock:
        _users += 1
        done = {(owner, name) for owner, name, _, _ in _patched}
        for target in TARGETS:
            if target.module.partition(".")[0] not in sys.modules:
                continue
            owner = _owner(target)
            original = vars(owner).get(target.method) if owner else None
            if owner is None or not callable(original) or (owner, target.method) in done:
                continue
            wrapper = _wrap(target, original)
            setattr(owner, target.method, wrapper)
            _patched.append((owner, target.method, original, wrapper))
        return len(_patched)


def uninstall() -> None:
    """One context fewer; the last restores every original."""
    global _users
    with _lock:
        _users -= 1
        if _users > 0:
            return
        _users = 0
        for owner, name, original, wrapper in reversed(_patched):
            if vars(owner).get(name) is wrapper:
                setattr(owner, name, original)
            else:  # patched again by someone else since: theirs stays, wrapping ours
                log.warning(
                    "%s.%s was replaced while learning() was active; left as it is",
                    owner.__qualname__,
                    name,
                )
        _patched.clear()
        for client in list(_hooked):
            ours = getattr(client, "__dict__", {}).get(HOOK)
            if not isinstance(ours, _OptionsHook):  # replaced since: theirs stays
                continue
            if ours.before is None:
                delattr(client, HOOK)
            else:
                setattr(client, HOOK, ours.before)
        _hooked.clear()


def installed() -> bool:
    with _lock:
        return bool(_patched)


def hook(client: object) -> bool:
    """Wrap the SDK client's options hook (`_prepare_options`, which the OpenAI and
    Anthropic SDKs call on every attempt of a request, after building its body from the
    arguments and before encoding it) on this one client, until the last context leaves:
    a call's memory can then be fetched while the SDK does that work, and put in the body
    at the end. Whatever the client's class makes of the hook (Azure's adds its headers)
    runs first. False when the client has no such hook: the memory must be put in the
    arguments before the call."""
    with _lock:
        if not _users:
            return False
        own = getattr(client, "__dict__", {}).get(HOOK)
        if isinstance(own, _OptionsHook):
            return True
        original = getattr(client, HOOK, None)
        if not callable(original) or inspect.iscoroutinefunction(original):
            return False
        try:
            _hooked.add(client)
            setattr(client, HOOK, _OptionsHook(original, own))
        except (AttributeError, TypeError):  # no weak references, or read-only attributes
            return False
        return True


class _OptionsHook:
    """The hook put on one client: the one it had (its class's, or its own: `before`),
    then the memory of the call under way, if it is still being fetched."""

    def __init__(self, original: Method, before: Method | None) -> None:
        self.original = original
        self.before = before

    def __call__(self, options: Any) -> Any:
        options = self.original(options)
        pending = deferred.get()
        return options if pending is None else pending.apply(options)


def _owner(target: Target) -> type | None:
    try:
        module = importlib.import_module(target.module)
    except ImportError:
        return None  # that SDK is not installed, or its layout changed
    owner = getattr(module, target.owner, None)
    return owner if isinstance(owner, type) else None


@contextmanager
def intercepting() -> Iterator[None]:
    """Marks the calling context as inside an interception, for work a session does later
    on a call's behalf (a stream manager's request, made when its block opens)."""
    token = _intercepting.set(True)
    try:
        yield
    finally:
        _intercepting.reset(token)


def _raw(kwargs: dict[str, Any]) -> bool:
    """Called through `.with_raw_response` / `.with_streaming_response`: passed through."""
    headers = kwargs.get("extra_headers")
    return isinstance(headers, dict) and any(
        str(name).lower() == RAW_RESPONSE_HEADER for name in headers
    )


def _wrap(target: Target, original: Method) -> Method:
    api = target.api
    kind = target.kind
    if kind == "acall":

        @functools.wraps(original)
        async def acall(self: object, *args: Any, **kwargs: Any) -> Any:
            session = active.get()
            if session is None or _intercepting.get() or _raw(kwargs):
                return await original(self, *args, **kwargs)
            token = _intercepting.set(True)
            try:
                return await session.acall(api, original, self, args, kwargs)
            finally:
                _intercepting.reset(token)

        return acall

    @functools.wraps(original)
    def call(self: object, *args: Any, **kwargs: Any) -> Any:
        session = active.get()
        if session is None or _intercepting.get() or _raw(kwargs):
            return original(self, *args, **kwargs)
        handler: Method = getattr(session, kind)
        token = _intercepting.set(True)
        try:
            return handler(api, original, self, args, kwargs)
        finally:
            _intercepting.reset(token)

    return call
