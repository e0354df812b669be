"""The floor plan, checked from the code: each module's imports of `api` read with `ast`.

Top to bottom (docs/architecture.md): the assembly (main, cli, worker); the HTTP wing
(`api/http`: routers, request dependencies, middlewares, the contract, the MCP and
OpenAI-compatible surfaces); the use cases over several domains; the runtime and its
plug-ins; the turn's journal; the domains; the ports; the store; the shared kit. A module
imports only from its own floor or below, but for the few imports named in UPWARD, each
with why it stays."""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

API = Path(__file__).parents[2] / "api"

ASSEMBLY = {"main", "cli", "worker"}  # what builds the app and starts its processes
# Floors, top first; a folder of `api` (or a top-level module) on each.
FLOORS: list[set[str]] = [
    ASSEMBLY,
    {"http"},
    {"transfer", "maintenance", "memory_layer", "memory_server", "chat"},
    {"subjects"},
    {"memory_runs"},
    {"runtime", "tools"},
    {"journal"},
    {
        "agents",
        "conversations",
        "documents",
        "memory",
        "settings",
        "auth",
        "users",
        "idempotency",
        "repositories",
    },
    {"search", "embeddings", "llm", "queue", "observability"},
    {"store"},
    {"kit", "config", "errors", "__init__"},
]
# Imports that run up a floor, each with why it stays. (Agents and conversations share a
# floor and know each other: a conversation belongs to an agent, and deleting an agent
# deletes its conversations.)
UPWARD: set[tuple[str, str]] = {
    # Repositories builds every domain's repository over the one table, those of the
    # domains above it too, so that services on every floor are handed one object built at
    # start-up. A repository module imports only its models, keys and the store, so
    # nothing of the floors above comes with it.
    ("api.repositories", "api.subjects.repository"),
    ("api.repositories", "api.journal.repository"),
    ("api.repositories", "api.memory_runs.repository"),
}
# Libraries of HTTP, known only to the wing (and the assembly that mounts it).
HTTP_LIBRARIES = ("fastapi", "starlette", "sse_starlette", "uvicorn")


def room(module: str) -> str:
    """`api.memory.archival` is in `memory`; `api.main` in `main`; `api` in `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor(module: str) -> int:
    found = [i for i, rooms in enumerate(FLOORS) if room(module) in rooms]
    assert found, f"{module}: its folder is on no floor; add it to FLOORS"
    return found[0]


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(API.rglob("*.py")):
        parts = path.relative_to(API.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, ast.parse(path.read_text(), str(path))


def imports(tree: ast.Module) -> Iterator[str]:
    """Every module named by an import, `from a.b import c` as `a.b.c` (c may be a name)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def module_of(name: str) -> str:
    """The module an imported name lives in: `api.memory.archival.insert` is in
    `api.memory.archival`; a module or a package is itself."""
    path = API.parent / name.replace(".", "/")
    if path.is_dir() or path.with_suffix(".py").exists():
        return name
    return name.rsplit(".", 1)[0]


def upward(module: str, tree: ast.Module) -> list[tuple[str, str]]:
    return [
        (module, module_of(name))
        for name in imports(tree)
        if name.startswith("api.") and floor(module_of(name)) < floor(module)
    ]


def test_nothing_below_the_wing_imports_it() -> None:
    below = [
        (module, name)
        for module, tree in modules()
        if room(module) not in ASSEMBLY | {"http"}
        for name in imports(tree)
        if name == "api.http" or name.startswith("api.http.")
    ]
    assert below == []


def test_no_domain_knows_http() -> None:
    """Routers, responses and requests live in the wing: a domain folder that imports a
    router, or FastAPI, Starlette or SSE at all, has HTTP in it."""
    knowing = [
        (module, name)
        for module, tree in modules()
        if room(module) not in ASSEMBLY | {"http"}
        for name in imports(tree)
        if name.split(".")[0] in HTTP_LIBRARIES or name.split(".")[-1] in {"router", "routes"}
    ]
    assert knowing == []


def test_imports_run_down_the_floors() -> None:
    found = {pair for module, tree in modules() for pair in upward(module, tree)}
    assert found - UPWARD == set(), "an import runs up a floor: move it, or explain it"
    assert UPWARD - found == set(), "an import named in UPWARD is gone: take it out"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from api.http.agents import router\n", [("api.memory.archival", "api.http.agents")]),
        ("from api.runtime import runner\n", [("api.memory.archival", "api.runtime.runner")]),
        ("from api.store.table import Table\n", []),
        ("import api.search.engine\n", []),
    ],
)
def test_the_floor_check_sees_an_import_up(source: str, expected: list[tuple[str, str]]) -> None:
    assert upward("api.memory.archival", ast.parse(source)) == expected
