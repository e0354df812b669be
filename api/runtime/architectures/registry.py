"""The architectures an agent can have, by name. Adding one is one registration line here,
or an entry point in the `agent_memory.architectures` group of an installed package."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points

from api.runtime.architectures.base import AgentArchitecture
from api.runtime.architectures.categorized_memory import CategorizedMemory
from api.runtime.architectures.krishna_memgpt import KrishnaMemGPT
from api.tools.native import NATIVE_TOOLS

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "agent_memory.architectures"

ARCHITECTURES: dict[str, type[AgentArchitecture]] = {}


def register(architecture: type[AgentArchitecture]) -> type[AgentArchitecture]:
    if not issubclass(architecture, AgentArchitecture):
        raise TypeError(f"{architecture!r} is not an AgentArchitecture")
    unknown = [name for name in architecture.tools if name not in NATIVE_TOOLS]
    if unknown:
        raise ValueError(f"{architecture.name!r} names tools that do not exist: {unknown}")
    existing = ARCHITECTURES.get(architecture.name)
    if existing is not None and existing is not architecture:
        raise ValueError(f"An architecture named {architecture.name!r} is registered already")
    ARCHITECTURES[architecture.name] = architecture
    return architecture


@contextmanager
def registered(architecture: type[AgentArchitecture]) -> Iterator[None]:
    """Registered for the duration of a block: for tests and embedding applications."""
    before = ARCHITECTURES.get(architecture.name)
    register(architecture)
    try:
        yield
    finally:
        if before is None:
            ARCHITECTURES.pop(architecture.name, None)


def load_entry_points() -> list[str]:
    """Register the architectures installed packages declare; the names registered. Code
    comes only from installed packages: a tenant's code is never loaded."""
    loaded: list[str] = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register(point.load())
        except Exception:  # one broken package must not take the service down
            log.exception("architecture entry point %s could not be loaded", point.name)
            continue
        loaded.append(point.name)
    return loaded


register(KrishnaMemGPT)
register(CategorizedMemory)
