import logging
from typing import Any

from fastapi.responses import JSONResponse

from api import __version__
from api.errors import public_body
from api.http.deps.app import SearchDep, SettingsDep, TableDep
from api.http.errors import json_error
from api.http.route_filter import Router
from api.observability.store import unwrapped
from api.store.sqlite import SqliteTable
from api.store.table import StoreError

log = logging.getLogger(__name__)
router = Router(tags=["health"])


@router.get("/health", operation_id="health")
async def health(table: TableDep, settings: SettingsDep, search: SearchDep) -> JSONResponse:
    """Liveness: `ok` while the process serves, whatever its store does (a load balancer
    or orchestrator asks `/health/ready` for that). Seed 002's fields too: the embedding
    backend and its dimension (null without one), and in local mode the SQLite file (null
    on DynamoDB, and in google mode: a server does not show its paths to the internet)."""
    engine = unwrapped(table)
    sqlite_file = engine.path if isinstance(engine, SqliteTable) else None
    body: dict[str, Any] = {
        "status": "ok",
        "store": table.engine,
        "table": table.name,
        "version": __version__,
        "embedding_backend": settings.memory_embedding_backend,
        "embedding_dimension": search.embedder.dimension if search.embedder else None,
        "database_path": sqlite_file if settings.auth_mode == "local" else None,
    }
    return JSONResponse(body)


@router.get("/health/ready", operation_id="health_ready")
async def ready(table: TableDep) -> JSONResponse:
    """Readiness: `ready` when the store answers; 503 with the store's error code when it
    does not (the details go to the log)."""
    try:
        await table.ping()
    except StoreError as e:
        log.warning("readiness: the store did not answer: %s", e)
        return json_error({"status": "unavailable", **public_body(e)}, 503)
    return JSONResponse({"status": "ready", "store": table.engine})
