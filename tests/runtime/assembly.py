"""A runtime put together as api/main.py puts it, for tests that run turns without the app."""

from collections.abc import Sequence

from api.config import Settings
from api.kit.clock import Clock
from api.repositories import Repositories
from api.runtime.architectures.registry import ARCHITECTURES
from api.runtime.builder import TurnBuilder
from api.runtime.hooks import HookProvider
from api.runtime.runner import Runtime
from api.runtime.turn import MessageClock
from api.search.engine import SearchEngine
from api.settings import keys
from api.settings.service import ProviderFactory
from api.store.table import Table


def runtime_on(
    table: Table,
    clock: Clock,
    settings: Settings,
    *,
    search: SearchEngine | None = None,
    hook_providers: Sequence[HookProvider] = (),
) -> Runtime:
    repos = Repositories.over(table)
    search = search or SearchEngine(repos.search, None, clock)
    return Runtime(
        repos,
        clock,
        settings,
        hook_providers,
        search=search,
        architectures=ARCHITECTURES,
        providers=ProviderFactory(keys.keyring(settings), settings),
        turns=TurnBuilder(repos, search, MessageClock(clock), settings.max_turn_steps),
    )
