"""Shared dependencies, named once so route signatures read as prose.

Dependencies are `async def` even when they await nothing: FastAPI runs a plain `def`
dependency in a worker thread, a hop that costs more than the dependency itself."""

from typing import Annotated

from fastapi import Depends, Request

from api.config import Settings
from api.kit.clock import Clock
from api.repositories import Repositories
from api.runtime.turn import MessageClock
from api.search.engine import SearchEngine
from api.settings.service import ProviderFactory
from api.store.table import Table


async def get_table(request: Request) -> Table:
    table: Table = request.state.table
    return table


async def get_repos(request: Request) -> Repositories:
    repos: Repositories = request.state.repos
    return repos


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
ReposDep = Annotated[Repositories, Depends(get_repos)]
ClockDep = Annotated[Clock, Depends(get_clock)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
SearchDep = Annotated[SearchEngine, Depends(get_search)]


async def get_providers(request: Request) -> ProviderFactory:
    providers: ProviderFactory = request.state.providers
    return providers


async def get_message_clock(request: Request) -> MessageClock:
    message_clock: MessageClock = request.state.message_clock
    return message_clock


# The app's one cache of provider clients, and the clock that orders every message stored.
ProvidersDep = Annotated[ProviderFactory, Depends(get_providers)]
MessageClockDep = Annotated[MessageClock, Depends(get_message_clock)]
