"""create_app(settings): the one place the service is assembled."""

import asyncio
import gc
import logging
import signal
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.middleware.sessions import SessionMiddleware

from api import __version__
from api.auth import oauth
from api.auth.tokens import TokenIssuer, issuer_for
from api.config import Settings, check_settings, load_settings
from api.documents.processing import DocumentProcessor
from api.embeddings.factory import start_embedder
from api.http import (
    agents,
    auth,
    chat,
    conversations,
    health,
    messages,
    observability,
    sse,
    transfer,
    users,
)
from api.http import documents as agent_documents
from api.http import errors as error_handlers
from api.http import memory as agent_memory
from api.http import memory_layer as seed004
from api.http import memory_server as seed002
from api.http import runs as runs_router
from api.http import settings as provider_settings
from api.http.contract import allow
from api.http.contract import document as contract
from api.http.mcp import router as mcp_metadata
from api.http.mcp.endpoint import McpEndpoint
from api.http.middleware.idempotency import Idempotency
from api.http.middleware.local_guard import LocalModeGuard
from api.http.middleware.observability import Observability
from api.http.middleware.request_limits import RequestLimits
from api.http.middleware.webapp import WebApp
from api.http.openai import router as openai_compat
from api.journal import reader as runs
from api.kit import periodic
from api.kit.clock import Clock, SystemClock
from api.kit.crypto import KeyRing
from api.kit.secrets import derived_key
from api.maintenance import layout
from api.memory_runs.service import MemoryRunner
from api.observability import logs, metrics, tracing
from api.observability.store import measured
from api.queue import get_queue
from api.queue.local import LocalQueue
from api.repositories import Repositories
from api.runtime.architectures import registry as architectures
from api.runtime.builder import TurnBuilder
from api.runtime.hooks import HookProvider
from api.runtime.lease import LEASE_SECONDS
from api.runtime.runner import Runtime
from api.runtime.turn import MessageClock
from api.search.engine import SearchEngine
from api.settings import keys as encryption_keys
from api.settings.service import ProviderFactory
from api.store import build_table, schema
from api.store.table import StoreError, Table
from api.users.service import LocalIdentity

if TYPE_CHECKING:
    from authlib.integrations.starlette_client import StarletteOAuth2App

log = logging.getLogger(__name__)
SWEEP_SECONDS = 3600.0


class State(TypedDict):
    """What the lifespan hands every request (as request.state)."""

    settings: Settings
    table: Table
    repos: Repositories
    clock: Clock
    local: LocalIdentity | None  # AUTH_MODE=local
    token_issuer: TokenIssuer | None  # AUTH_MODE=google
    google: "StarletteOAuth2App | None"  # AUTH_MODE=google
    keyring: KeyRing
    runtime: Runtime
    search: SearchEngine
    memory_runs: MemoryRunner
    documents: DocumentProcessor
    providers: ProviderFactory
    message_clock: MessageClock


async def sweep_dead_runs(repos: Repositories, clock: Clock) -> None:
    """End as interrupted the turns whose process died: at start, then as leases lapse."""

    async def sweep() -> None:
        ended = await runs.sweep_dead(repos, clock)
        if ended:
            log.warning("%d turns left running by a stopped process were interrupted", ended)
            metrics.BACKGROUND_RUNS_SWEPT.labels("turn").inc(ended)

    await periodic.every(LEASE_SECONDS, sweep, "looking for turns left running", (StoreError,))


async def _schema_checked(table: Table, repos: Repositories) -> bool:
    """The table's layout made current (NewerSchema stops the start); False when the
    store cannot be reached yet."""
    try:
        await schema.ensure_current(table, __version__, layout.steps(repos))
    except schema.NewerSchema:
        raise
    except StoreError as e:
        log.warning("the table's layout could not be checked yet: %s", e)
        return False
    return True


async def check_schema_later(table: Table, repos: Repositories, every_seconds: float = 5.0) -> None:
    """For a store out of reach at start: its layout checked once it answers. A newer one
    found then stops the server, as it would have stopped its start."""
    while True:
        await asyncio.sleep(every_seconds)
        try:
            if await _schema_checked(table, repos):
                return
        except schema.NewerSchema as e:
            log.critical("%s Stopping.", e)
            signal.raise_signal(signal.SIGTERM)
            return


async def sweep_expired(table: Table, every_seconds: float = SWEEP_SECONDS) -> None:
    """Delete expired items where the engine does not, at start and then periodically."""

    async def sweep() -> None:
        deleted = await table.sweep_expired()
        if deleted:
            log.info("deleted %d expired items", deleted)

    await periodic.every(every_seconds, sweep, "sweeping expired items", (StoreError,))


def create_app(
    settings: Settings | None = None,
    *,
    table: Table | None = None,
    clock: Clock | None = None,
    hook_providers: Sequence[HookProvider] = (),
    access_token_seconds: int | None = None,
) -> FastAPI:
    """The service. `table` lets a caller share a store it owns; otherwise one is built.
    `hook_providers` run in every turn after the runtime's own (continuity).
    `access_token_seconds` overrides ACCESS_TOKEN_MINUTES for a test that waits for a token
    to expire; it is no setting, so no deployment can make tokens that short."""
    settings = settings or load_settings()
    check_settings(settings)
    tracing.check(settings)
    clock = clock or SystemClock()
    google_mode = settings.auth_mode == "google"
    keyring = encryption_keys.keyring(settings)
    issuer = (
        issuer_for(_jwt_secret(settings), settings.access_token_minutes) if google_mode else None
    )
    if issuer is not None and access_token_seconds is not None:
        issuer = replace(issuer, lifetime_seconds=access_token_seconds)
    mcp = McpEndpoint(settings)  # builds the MCP SDK's server on its first request

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[State]:
        store = measured(table or build_table(settings, clock), settings)
        repos = Repositories.over(store)
        tracer_provider = tracing.start(settings)
        sweepers: list[asyncio.Task[None]] = []
        runtime: Runtime | None = None
        search: SearchEngine | None = None
        memory_runner: MemoryRunner | None = None
        documents: DocumentProcessor | None = None
        providers: ProviderFactory | None = None
        try:
            embedder = await start_embedder(settings)
            search = SearchEngine(
                repos.search,
                embedder,
                clock,
                memory_budget=settings.search_index_memory_mb * 2**20,
            )
            if settings.create_table:
                await store.create()
            # An older layout is migrated, a newer one refused (docs/operations.md); a store
            # out of reach now is checked once it answers (liveness does not wait for it).
            checked = await _schema_checked(store, repos)
            log.info("store ready: %s table %s", store.engine, store.name)
            sweepers = [
                asyncio.create_task(sweep_expired(store)),
                asyncio.create_task(sweep_dead_runs(repos, clock)),
            ]
            if not checked:
                sweepers.append(asyncio.create_task(check_schema_later(store, repos)))
            loaded = architectures.load_entry_points()
            if loaded:
                log.info("architectures from installed packages: %s", ", ".join(loaded))
            # Made once and handed to what needs them (no one reaches them through another):
            # one cache of provider clients, one clock that orders every message stored.
            providers = ProviderFactory(keyring, settings)
            message_clock = MessageClock(clock)
            turns = TurnBuilder(repos, search, message_clock, settings.max_turn_steps)
            runtime = Runtime(
                repos,
                clock,
                settings,
                hook_providers,
                search=search,
                architectures=architectures.ARCHITECTURES,
                providers=providers,
                turns=turns,
            )
            memory_runner = MemoryRunner(
                repos, search, clock, settings, get_queue(settings), providers, turns
            )
            memory_runner.start()
            # Uploads are processed by this process's workers, woken through the queue port
            # (the table holds the work: docs/documents.md).
            documents = DocumentProcessor(repos, search, clock, settings, LocalQueue())
            documents.start()
            # What start-up made lives as long as the process: kept out of every later
            # collection, which then only walks what requests make.
            gc.freeze()
            # Young collections every 10,000 allocations rather than 700: measured over 600
            # streamed turns at 200 concurrent (bench/load.py's fake model, one worker),
            # the collector's CPU per turn fell from 2.9 ms (916 young, 83 middle, 7 full
            # collections, the longest 169 ms) to 0.9 ms (41, 4, 0); 50,000 saved 0.3 ms more
            # but leaves cyclic garbage for longer.
            gc.set_threshold(10_000, 10, 10)
            gc.enable()  # `serve` and its workers load the app with it off (api/worker.py)
            # A server told to stop ends the open streams at once (docs/sse.md).
            with sse.streams_end_on_exit_signals():
                yield State(
                    settings=settings,
                    table=store,
                    repos=repos,
                    clock=clock,
                    local=None if google_mode else LocalIdentity(settings.local_user_email),
                    token_issuer=issuer,
                    google=oauth.google_client(settings) if google_mode else None,
                    keyring=keyring,
                    runtime=runtime,
                    search=search,
                    memory_runs=memory_runner,
                    documents=documents,
                    providers=providers,
                    message_clock=message_clock,
                )
        finally:
            await mcp.aclose()  # first: its tools use everything below
            if memory_runner is not None:
                await memory_runner.stop()
            if documents is not None:
                await documents.stop()
            if runtime is not None:
                await runtime.stop()
            if providers is not None:
                await providers.aclose()  # last of the three: turns and runs use them
            if search is not None:
                await search.aclose()
            for sweeper in sweepers:
                sweeper.cancel()
            await asyncio.gather(*sweepers, return_exceptions=True)
            if table is None:
                await store.close()
            tracing.stop(tracer_provider)
            metrics.process_exiting()

    app = FastAPI(
        title="Agent memory platform",
        version=__version__,
        summary="Agents with long-term memory over REST and Server-Sent Events.",
        lifespan=lifespan,
    )
    error_handlers.install(app)
    allow.install(app)  # a 405's Allow header from every route of its path
    contract.install(app, local_mode=not google_mode)
    # Inside CORS, so that its replays and refusals carry CORS headers too, and inside
    # RequestLimits, so that the body it reads is bounded. A streamed turn sent again
    # re-attaches to its run (GET /runs/{id}/events from the first event).
    app.add_middleware(Idempotency, resume=runs_router.resume)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=[settings.frontend_origin],
        allow_credentials=True,
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        allow_headers=[
            "Authorization",
            "Content-Type",
            "If-Match",
            "Idempotency-Key",
            "Last-Event-ID",
            "X-Request-ID",
        ],
        expose_headers=[
            "ETag",
            "Retry-After",
            "Run-Id",
            "Idempotent-Replayed",
            "X-Request-ID",
            "Undo-Until",
        ],
    )
    app.include_router(health.router)
    app.include_router(observability.router)
    app.include_router(users.router)
    app.include_router(provider_settings.router)
    app.include_router(agents.router)
    app.include_router(agent_memory.router)
    app.include_router(agent_documents.router)
    app.include_router(messages.router)
    app.include_router(conversations.router)
    app.include_router(chat.router)
    app.include_router(seed002.router)
    app.include_router(seed004.router)
    app.include_router(runs_router.router)
    app.include_router(openai_compat.router)
    app.include_router(transfer.router)
    app.include_router(mcp_metadata.router)
    app.router.routes.append(mcp.route())
    app.add_middleware(
        RequestLimits,
        max_body_bytes=settings.max_request_bytes,
        # An import file is streamed to disk by its route, bounded there by its own limit.
        larger={transfer.IMPORT_PATH: settings.max_import_bytes},
        # A document's upload, refused past DOCUMENT_MAX_BYTES by its route (a clear 413).
        larger_paths={
            agent_documents.UPLOAD_PATH: max(
                settings.max_request_bytes,
                settings.document_max_bytes + agent_documents.MULTIPART_OVERHEAD,
            )
        },
    )
    # The web app's pages and files, inside the local-mode guard (docs/web.md).
    app.add_middleware(WebApp, auth_mode=settings.auth_mode)
    if not google_mode:
        app.add_middleware(
            LocalModeGuard,
            allowed_origins={settings.frontend_origin},
            hosts=settings.host_names,
        )
    if google_mode:
        app.add_middleware(
            SessionMiddleware,
            secret_key=derived_key(_jwt_secret(settings), "oauth-flow-cookie"),
            session_cookie=oauth.FLOW_COOKIE,
            max_age=oauth.FLOW_SECONDS,
            path="/auth/google",
            same_site="lax",  # it must come back on Google's top-level redirect
            https_only=settings.cookie_secure,
        )
        app.include_router(auth.router)
    # Outermost: every answer, the refusals of the middlewares above included, carries the
    # request's id, and is counted, timed and logged.
    app.add_middleware(Observability)
    return app


def _jwt_secret(settings: Settings) -> str:
    assert settings.jwt_secret is not None  # check_settings requires it in google mode
    return settings.jwt_secret.get_secret_value()


def __getattr__(name: str) -> FastAPI:
    """`uvicorn api.main:app`, as seeds 000 and 004 start the service: the app is built
    from the environment when first asked for, so importing this module builds nothing."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    settings = load_settings()
    if not logging.getLogger().handlers:  # a worker of `serve --workers N`, or bare uvicorn
        logs.configure_logging(settings)
    app = create_app(settings)
    globals()["app"] = app
    return app
