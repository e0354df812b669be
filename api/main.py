"""create_app(settings): the one place the service is assembled."""

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypedDict

from fastapi import FastAPI

from api import __version__, error_handlers
from api.config import Settings, check_settings, load_settings
from api.health import router as health
from api.kit.clock import Clock
from api.store import build_table
from api.store.table import StoreError, Table

log = logging.getLogger(__name__)
SWEEP_SECONDS = 3600.0


class State(TypedDict):
    """What the lifespan hands every request (as request.state)."""

    settings: Settings
    table: Table


async def sweep_expired(table: Table, every_seconds: float = SWEEP_SECONDS) -> None:
    """Delete expired items where the engine does not, at start and then periodically."""
    while True:
        try:
            deleted = await table.sweep_expired()
            if deleted:
                log.info("deleted %d expired items", deleted)
        except StoreError as e:
            log.warning("sweeping expired items failed: %s", e)
        await asyncio.sleep(every_seconds)


def create_app(
    settings: Settings | None = None, *, table: Table | None = None, clock: Clock | None = None
) -> FastAPI:
    """The service. `table` lets a caller share a store it owns; otherwise one is built."""
    settings = settings or load_settings()
    check_settings(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[State]:
        store = table or build_table(settings, clock)
        sweeper: asyncio.Task[None] | None = None
        try:
            if settings.create_table:
                await store.create()
            log.info("store ready: %s table %s", store.engine, store.name)
            sweeper = asyncio.create_task(sweep_expired(store))
            yield State(settings=settings, table=store)
        finally:
            if sweeper is not None:
                sweeper.cancel()
                await asyncio.gather(sweeper, return_exceptions=True)
            if table is None:
                await store.close()

    app = FastAPI(
        title="Agent memory platform",
        version=__version__,
        summary="Agents with long-term memory over REST and Server-Sent Events.",
        lifespan=lifespan,
    )
    error_handlers.install(app)
    app.include_router(health.router)
    return app
