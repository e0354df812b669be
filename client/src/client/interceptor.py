"""learning(): seed 002's client interceptor.

    with learning(agent="my_agent"):
        client.chat.completions.create(...)

On entry: the memory server's /health, the agent ensured (POST /agents), the SDKs patched.
Each call in the block: the last user message read, the agent's memory fetched for it
(POST /context) and put before the request (unless capture_only), the model called, the
user's message and the reply handed to a worker that stores them (POST /messages) off the
call's path, and the response returned unchanged. On exit: open streams captured as they
stand, the worker flushed, the originals restored when no other context uses them."""

import asyncio
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import ExitStack
from contextvars import Token
from functools import partial
from types import TracebackType
from typing import Any, Literal

from client import patching
from client.apis import Api, Kwargs, Prompt, Reply
from client.capture import CaptureWorker, Exchange, Foreground, Recorder, exchange
from client.formatting import format_context
from client.patching import Method, Session
from client.server import DEFAULT_URL, JsonObject, MemoryServer
from client.streams import Observer, tap, tap_async

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0
DEFAULT_FLUSH_TIMEOUT = 30.0
MAX_RECALLED = 32  # tool loops under way at once in one context, at most, that reuse memory
State = Literal["new", "entering", "active", "leaving", "closed"]


def learning(
    agent: str,
    server_url: str | None = None,
    capture_only: bool = False,
    api_key: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    flush_timeout: float = DEFAULT_FLUSH_TIMEOUT,
) -> "Learning":
    """A context manager (`with` or `async with`) giving the OpenAI and Anthropic calls in
    its block the memory of `agent` on the memory server.

    server_url: MEMORY_SERVER_URL, else http://127.0.0.1:8283. api_key: MEMORY_API_KEY
    (a server in google mode needs one; a local one ignores it). capture_only: store the
    conversation, inject nothing. timeout: seconds for each memory-server request.
    flush_timeout: seconds the exit waits for captures still queued (those left are
    counted as failures)."""
    return Learning(
        agent,
        server_url=server_url,
        capture_only=capture_only,
        api_key=api_key,
        timeout=timeout,
        flush_timeout=flush_timeout,
    )


class Learning:
    """One learning() context. Its counters tell what happened to the captures:
    `stored`, `capture_failures`, `context_failures`, `pending`, and `errors` (the latest
    failures' descriptions). Every failure is also logged as a warning."""

    def __init__(
        self,
        agent: str,
        *,
        server_url: str | None,
        capture_only: bool,
        api_key: str | None,
        timeout: float,
        flush_timeout: float,
    ) -> None:
        if not isinstance(agent, str) or not agent.strip():
            raise ValueError("learning() needs an agent name, such as learning(agent='my_agent')")
        self.agent = agent
        self.server_url = (server_url or os.environ.get("MEMORY_SERVER_URL") or DEFAULT_URL).rstrip(
            "/"
        )
        self.capture_only = capture_only
        self.agent_id: str | None = None
        self._api_key = api_key if api_key is not None else os.environ.get("MEMORY_API_KEY")
        self._timeout = timeout
        self._flush_timeout = flush_timeout
        self._recorder = Recorder(agent)
        self._foreground = Foreground()
        self._state: State = "new"
        self._server: MemoryServer | None = None
        self._worker: CaptureWorker | None = None
        self._token: Token[Session | None] | None = None
        self._open: set[Observer] = set()
        self._open_lock = threading.Lock()
        # The memory last fetched per query, for the later steps of a tool loop.
        self._recall: OrderedDict[str, str | None] = OrderedDict()
        self._recall_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"learning(agent={self.agent!r}, server_url={self.server_url!r}, {self._state})"

    # --- what happened ------------------------------------------------------------------

    @property
    def stored(self) -> int:
        """Messages stored so far."""
        return self._recorder.counts.stored

    @property
    def capture_failures(self) -> int:
        """Messages that could not be stored (each also logged as a warning)."""
        return self._recorder.counts.capture_failures

    @property
    def context_failures(self) -> int:
        """Calls that went to the model without memory because the server failed."""
        return self._recorder.counts.context_failures

    @property
    def pending(self) -> int:
        """Messages handed to the worker and not yet stored or failed."""
        return self._recorder.counts.pending

    @property
    def errors(self) -> tuple[str, ...]:
        """The latest failures (at most 50), oldest first."""
        with self._recorder.changed:
            return tuple(self._recorder.counts.errors)

    def flush(self, timeout: float | None = None) -> bool:
        """Send the captures held for a gap between calls, and wait until every capture so
        far is stored or failed; False on timeout."""
        worker = self._worker
        return worker.flush(self._flush_timeout if timeout is None else timeout) if worker else True

    # --- entering and leaving -----------------------------------------------------------

    def __enter__(self) -> "Learning":
        self._connect()
        self._activate()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._deactivate()
        self._close()

    async def __aenter__(self) -> "Learning":
        await asyncio.to_thread(self._connect)
        self._activate()  # in the caller's context, so its tasks see it
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._deactivate()
        await asyncio.to_thread(self._close)

    def _connect(self) -> None:
        if self._state != "new":
            raise RuntimeError("a learning() context is entered once; call learning() again")
        self._state = "entering"
        server = MemoryServer(self.server_url, api_key=self._api_key, timeout=self._timeout)
        try:
            server.health()
            agent = server.ensure_agent(self.agent)
        except BaseException:
            server.close()
            self._state = "closed"
            raise
        agent_id = agent.get("id")
        self.agent_id = agent_id if isinstance(agent_id, str) else None
        self._server = server
        self._worker = CaptureWorker(
            server, self.agent, self._recorder, self._foreground, yield_for=self._timeout
        )

    def _activate(self) -> None:
        if patching.install() == 0:
            log.warning(
                "learning(): neither openai nor anthropic is imported, so no call is watched; "
                "import the SDK before entering learning()"
            )
        self._token = patching.active.set(self)
        self._state = "active"

    def _deactivate(self) -> None:
        self._state = "leaving"
        token, self._token = self._token, None
        if token is not None:
            try:
                patching.active.reset(token)
            except (ValueError, RuntimeError):  # left from another context than it entered
                previous = token.old_value
                patching.active.set(None if previous is Token.MISSING else previous)
        patching.uninstall()
        with self._open_lock:
            still_open = list(self._open)
        for observer in still_open:
            observer.end(closed_early=True)

    def _close(self) -> None:
        try:
            if self._worker is not None:
                self._worker.close(self._flush_timeout)
        finally:
            self._state = "closed"
            if self._server is not None:
                self._server.close()
        counts = self._recorder.counts
        if counts.capture_failures or counts.context_failures:
            log.warning(
                "learning(agent=%r) ended: %d message(s) stored, %d not stored, %d call(s) "
                "without memory; see .errors",
                self.agent,
                counts.stored,
                counts.capture_failures,
                counts.context_failures,
            )

    # --- calls (the patched methods hand them here) --------------------------------------

    def call(self, api: Api, original: Method, resource: object, args: Any, kwargs: Any) -> Any:
        if self._state != "active":
            return original(resource, *args, **kwargs)
        kwargs, prompt = self._read(api, kwargs)
        pending = self._fetch_later(api, resource, prompt)
        if pending is None:
            kwargs = self._with_memory(api, kwargs, prompt)
            result = original(resource, *args, **kwargs)
        else:
            token = patching.deferred.set(pending)
            try:
                result = original(resource, *args, **kwargs)
            finally:
                patching.deferred.reset(token)
                pending.close()
        return self._observe(api, kwargs, prompt, result, asynchronous=False)

    async def acall(
        self, api: Api, original: Method, resource: object, args: Any, kwargs: Any
    ) -> Any:
        if self._state != "active":
            return await original(resource, *args, **kwargs)
        # The memory goes into the arguments first: fetched in a worker thread while the
        # SDK's coroutines built the request, it came no sooner (measured: the thread and
        # the loop take turns with the interpreter).
        kwargs, prompt = await self._aprepare(api, kwargs)
        result = await original(resource, *args, **kwargs)
        return self._observe(api, kwargs, prompt, result, asynchronous=True)

    def stream_manager(
        self, api: Api, original: Method, resource: object, args: Any, kwargs: Any
    ) -> Any:
        """Anthropic's `messages.stream()`: the memory goes into the request now; the raw
        stream is watched when the manager's `with` opens it."""
        if self._state != "active":
            return original(resource, *args, **kwargs)
        kwargs, prompt = self._prepare(api, kwargs)
        manager = original(resource, *args, **kwargs)
        attr = _request_attribute(manager)
        if prompt is None or attr is None:
            if attr is None:
                self._recorder.failure("capture", "messages.stream() changed shape: not captured")
            return manager
        request: Method = getattr(manager, attr)

        def watched() -> Any:
            raw = request()
            self._watch(api, kwargs, prompt, raw, asynchronous=False)
            return raw

        setattr(manager, attr, watched)
        return manager

    def astream_manager(
        self, api: Api, original: Method, resource: object, args: Any, kwargs: Any
    ) -> Any:
        """AsyncAnthropic's `messages.stream()` (a plain method returning a manager whose
        request is awaited by `async with`): the memory is fetched without blocking the
        loop when the block opens, and the request made then with it."""
        if self._state != "active":
            return original(resource, *args, **kwargs)
        manager = original(resource, *args, **kwargs)
        attr = _request_attribute(manager)
        if attr is None:
            self._recorder.failure("capture", "messages.stream() changed shape: not captured")
            return manager
        unsent = getattr(manager, attr)

        async def request() -> Any:
            if hasattr(unsent, "close"):
                unsent.close()  # the request made without memory is never sent
            prepared, prompt = await self._aprepare(api, kwargs)
            with patching.intercepting():
                raw = await getattr(original(resource, *args, **prepared), attr)
            if prompt is not None:
                self._watch(api, prepared, prompt, raw, asynchronous=True)
            return raw

        setattr(manager, attr, request())
        return manager

    # --- before the model ---------------------------------------------------------------

    def _read(self, api: Api, kwargs: Kwargs) -> tuple[Kwargs, Prompt | None]:
        # A one-shot iterable of the caller's is read here instead of in the SDK: what it
        # raises reaches the caller as it would from the SDK.
        kwargs = api.normalize(kwargs)
        try:
            return kwargs, api.prompt(kwargs)
        except Exception as e:
            self._recorder.failure(
                "capture", f"the request could not be read ({e!r}); it was sent as it was"
            )
            return kwargs, None

    def _prepare(self, api: Api, kwargs: Kwargs) -> tuple[Kwargs, Prompt | None]:
        """The arguments to send (with the memory, unless capture_only) and the prompt
        read from them (None when they could not be read: nothing is then stored)."""
        kwargs, prompt = self._read(api, kwargs)
        return self._with_memory(api, kwargs, prompt), prompt

    async def _aprepare(self, api: Api, kwargs: Kwargs) -> tuple[Kwargs, Prompt | None]:
        """As _prepare, with the memory fetched in a worker thread, off the event loop."""
        kwargs, prompt = self._read(api, kwargs)
        if prompt is not None and not self.capture_only and self._state == "active":
            found, memory = self._recalled(prompt)
            if not found:
                memory = await asyncio.to_thread(self._memory, prompt.query)
            kwargs = self._inject(api, kwargs, memory)
        return kwargs, prompt

    def _with_memory(self, api: Api, kwargs: Kwargs, prompt: Prompt | None) -> Kwargs:
        if prompt is None or self.capture_only:
            return kwargs
        found, memory = self._recalled(prompt)
        return self._inject(api, kwargs, memory if found else self._memory(prompt.query))

    def _fetch_later(self, api: Api, resource: object, prompt: Prompt | None) -> "Later | None":
        """The call's memory fetch, sent now and read when the SDK has built the request's
        body (the options hook), so that the server's work and the SDK's overlap; None when
        the memory goes into the arguments first (capture_only, a tool loop's later step,
        a client without the hook)."""
        server = self._server
        if prompt is None or self.capture_only or server is None or self._recalled(prompt)[0]:
            return None
        if not patching.hook(getattr(resource, "_client", None)):
            return None
        stack = ExitStack()
        stack.enter_context(self._foreground.fetching())
        try:
            pending = server.start_context(self.agent, prompt.query)
        except BaseException:
            stack.close()
            raise
        stack.callback(pending.cancel)  # once read, there is nothing left to give up
        return Later(self, api, partial(self._memory, prompt.query, pending.result), stack)

    def _recalled(self, prompt: Prompt) -> tuple[bool, str | None]:
        """For a step of a tool loop (the request goes on from tool results, its user
        message asked before), the memory fetched for that message: fetched again, it would
        quote the very request being answered, stored since."""
        if prompt.user is not None or not prompt.query:
            return False, None
        with self._recall_lock:
            if prompt.query in self._recall:
                return True, self._recall[prompt.query]
        return False, None

    def _memory(self, query: str, read: Callable[[], JsonObject] | None = None) -> str | None:
        """The memory for `query`, formatted; None when there is none or the server failed
        (counted). `read`: the answer of a request already sent (its caller marks the
        fetch as under way)."""
        server = self._server
        if server is None:
            return None
        try:
            if read is None:
                with self._foreground.fetching():
                    answer = server.context(self.agent, query)
            else:
                answer = read()
            memory = format_context(answer)
        except Exception as e:
            self._recorder.failure("context", f"the call went on without memory: {e}")
            return None
        with self._recall_lock:
            self._recall[query] = memory
            self._recall.move_to_end(query)
            while len(self._recall) > MAX_RECALLED:
                self._recall.popitem(last=False)
        return memory

    def _inject(self, api: Api, kwargs: Kwargs, memory: str | None) -> Kwargs:
        if memory is None:
            return kwargs
        try:
            return api.inject(kwargs, memory)
        except Exception as e:
            self._recorder.failure("context", f"the memory could not be put in the request: {e!r}")
            return kwargs

    # --- after the model ----------------------------------------------------------------

    def _observe(
        self, api: Api, kwargs: Kwargs, prompt: Prompt | None, result: Any, *, asynchronous: bool
    ) -> Any:
        if prompt is None:
            return result
        if kwargs.get("stream") is True:
            self._watch(api, kwargs, prompt, result, asynchronous=asynchronous)
            return result
        try:
            reply: Reply | None = api.reply(result)
        except Exception as e:
            self._recorder.failure("capture", f"the reply could not be read: {e!r}")
            reply = None
        self._submit(
            exchange(
                api=api.name, model=_model(kwargs), user=prompt.user, reply=reply, stream=False
            )
        )
        return result

    def _watch(
        self, api: Api, kwargs: Kwargs, prompt: Prompt, stream: Any, *, asynchronous: bool
    ) -> None:
        report = partial(self._stream_ended, api.name, _model(kwargs), prompt.user)
        observer = Observer(api.accumulator(), report)
        with self._open_lock:
            self._open.add(observer)
        try:
            (tap_async if asynchronous else tap)(stream, observer)
        except Exception as e:
            with self._open_lock:
                self._open.discard(observer)
            self._recorder.failure(
                "capture", f"the stream could not be watched ({e!r}): only the question is stored"
            )
            self._submit(
                exchange(
                    api=api.name, model=_model(kwargs), user=prompt.user, reply=None, stream=True
                )
            )

    def _stream_ended(
        self,
        api: str,
        model: str | None,
        user: str | None,
        observer: Observer,
        reply: Reply | None,
        interrupted: bool,
        error: str | None,
    ) -> None:
        with self._open_lock:
            self._open.discard(observer)
        if error is not None:
            self._recorder.failure("capture", error)
        self._submit(
            exchange(
                api=api, model=model, user=user, reply=reply, stream=True, interrupted=interrupted
            )
        )

    def _submit(self, item: Exchange) -> None:
        if self._worker is not None:  # entered: the worker counts what comes after the end
            self._worker.submit(item)


class Later:
    """A call's memory on its way while the SDK builds the request: the options hook
    (client.patching) puts it in the body of each attempt, the first waiting for it."""

    def __init__(
        self,
        session: Learning,
        api: Api,
        fetch: Callable[[], str | None],
        fetching: ExitStack,
    ) -> None:
        self._session = session
        self._api = api
        self._fetch: Callable[[], str | None] | None = fetch
        self._fetching = fetching
        self._memory: str | None = None

    def apply(self, options: Any) -> Any:
        if self._fetch is not None:
            fetch, self._fetch = self._fetch, None
            try:
                self._memory = fetch()
            finally:
                self._fetching.close()
        return self._put(options)

    def close(self) -> None:
        """The call is over: a fetch never read (the SDK failed before sending) is
        given up."""
        self._fetch = None
        self._fetching.close()

    def _put(self, options: Any) -> Any:
        if self._memory is None:
            return options
        body = getattr(options, "json_data", None)
        if not isinstance(body, dict):
            self._session._recorder.failure(
                "context", "the request's body was not an object: sent without memory"
            )
            return options
        options.json_data = self._session._inject(self._api, body, self._memory)
        return options


def _model(kwargs: Kwargs) -> str | None:
    model = kwargs.get("model")
    return model if isinstance(model, str) else None


def _request_attribute(manager: object) -> str | None:
    """The stream manager's private request (`_MessageStreamManager__api_request`)."""
    return next((name for name in vars(manager) if name.endswith("__api_request")), None)
