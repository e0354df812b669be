from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api import __version__
from api.deps import TableDep
from api.store.table import StoreError

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(table: TableDep) -> JSONResponse:
    """`ok` when the store answers; 503 with the store's error when it does not."""
    body: dict[str, Any] = {"store": table.engine, "table": table.name, "version": __version__}
    try:
        await table.ping()
    except StoreError as e:
        return JSONResponse(
            {"status": "unavailable", "code": e.code, "message": e.message, **body},
            status_code=503,
        )
    return JSONResponse({"status": "ok", **body})
