import logging
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api import __version__
from api.deps import SearchDep, SettingsDep, TableDep
from api.error_handlers import public_body
from api.store.sqlite import SqliteTable
from api.store.table import StoreError

log = logging.getLogger(__name__)
router = APIRouter(tags=["health"])


@router.get("/health")
async def health(table: TableDep, settings: SettingsDep, search: SearchDep) -> JSONResponse:
    """`ok` when the store answers; 503 with the store's error when it does not. Seed 002's
    fields too: the embedding backend and its dimension (null without one), and in local
    mode the SQLite file (null on DynamoDB, and in google mode: a server does not show its
    paths to the internet)."""
    sqlite_file = table.path if isinstance(table, SqliteTable) else None
    body: dict[str, Any] = {
        "store": table.engine,
        "table": table.name,
        "version": __version__,
        "embedding_backend": settings.memory_embedding_backend,
        "embedding_dimension": search.embedder.dimension if search.embedder else None,
        "database_path": sqlite_file if settings.auth_mode == "local" else None,
    }
    try:
        await table.ping()
    except StoreError as e:
        log.warning("health: the store did not answer: %s", e)
        return JSONResponse({"status": "unavailable", **public_body(e), **body}, status_code=503)
    return JSONResponse({"status": "ok", **body})
