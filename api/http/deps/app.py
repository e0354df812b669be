"""Shared dependencies, named once so route signatures read as prose.

Dependencies are `async def` even when they await nothing: FastAPI runs a plain `def`
dependency in a worker thread, a hop that costs more than the dependency itself."""

from typing import Annotated

from fastapi import Depends, Request

from api.config import Settings
from api.kit.clock import Clock
from api.search.engine import SearchEngine
from api.store.table import Table


async def get_table(request: Request) -> Table:
    table: Table = request.state.table
    return table


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.state.settings
    return settings


async def get_clock(request: Request) -> Clock:
    clock: Clock = request.state.clock
    return clock


async def get_search(request: Request) -> SearchEngine:
    search: SearchEngine = request.state.search
    return search


TableDep = Annotated[Table, Depends(get_table)]
ClockDep = Annotated[Clock, Depends(get_clock)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
SearchDep = Annotated[SearchEngine, Depends(get_search)]
