import logging
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api import __version__
from api.deps import TableDep
from api.error_handlers import public_body
from api.store.table import StoreError

log = logging.getLogger(__name__)
router = APIRouter(tags=["health"])


@router.get("/health")
async def health(table: TableDep) -> JSONResponse:
    """`ok` when the store answers; 503 with the store's error when it does not."""
    body: dict[str, Any] = {"store": table.engine, "table": table.name, "version": __version__}
    try:
        await table.ping()
    except StoreError as e:
        log.warning("health: the store did not answer: %s", e)
        return JSONResponse({"status": "unavailable", **public_body(e), **body}, status_code=503)
    return JSONResponse({"status": "ok", **body})
