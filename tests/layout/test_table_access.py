"""Only repositories touch the table, checked from the code with `ast`.

Every domain's repository is a class built with the table once at start-up
(`api/repositories.py`); services are handed those, never the table. So outside the store,
the repositories and the code that builds them, no module names the Table port, builds
one, pages through one, or reads a `table` attribute off anything (a search engine, a
runtime) but for one case: a transaction composed of several domains' writes, sent with
`repos.table.transact_write(ops)`."""

import ast
from pathlib import Path

import pytest

from api.kit.clock import FrozenClock
from api.search.engine import SearchEngine
from api.search.repository import SearchRepository
from api.store.definition import load_definition
from api.store.sqlite import SqliteTable
from tests.layout.test_layers import modules

# Where the table is the subject, each with why.
ALLOWED = {
    "api.repositories",  # builds every repository over the table
    "api.main",  # the lifespan builds the table, its schema check and sweeps
    "api.cli",  # each command builds the table it acts on
    "api.worker",  # loads the app
    "api.maintenance.backup",  # copies the SQLite file itself
    "api.observability.store",  # times every call of the port: a wrapper of it
    "api.http.deps.app",  # TableDep: /health and /ready ask the store itself, no domain
}
# Names that hand out the table or work on one directly.
TABLE_NAMES = {("api.store.table", "Table"), ("api.store", "Table"), ("api.store", "build_table")}
TABLE_MODULES = {"api.store.pages", "api.store.leases"}


def allowed(module: str) -> bool:
    parts = module.split(".")
    return module in ALLOWED or parts[:2] == ["api", "store"] or parts[-1] == "repository"


def table_uses(tree: ast.Module) -> list[str]:
    """What of the table a module reaches for, as source text."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if (
                    (node.module, alias.name) in TABLE_NAMES
                    or node.module in TABLE_MODULES
                    or f"{node.module}.{alias.name}" in TABLE_MODULES
                ):
                    found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name in TABLE_MODULES]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "table"
            and not _composed_transaction(node)
        ):
            found.append(ast.unparse(node))
    return found


def _composed_transaction(node: ast.Attribute) -> bool:
    """`repos.table.transact_write(...)` (or `self.repos.table...`): the one use allowed."""
    holder = node.value
    named_repos = (isinstance(holder, ast.Name) and holder.id == "repos") or (
        isinstance(holder, ast.Attribute) and holder.attr == "repos"
    )
    parent = getattr(node, "parent", None)
    return named_repos and isinstance(parent, ast.Attribute) and parent.attr == "transact_write"


def with_parents(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            setattr(child, "parent", node)  # noqa: B010 (ast nodes declare no such field)
    return tree


def test_only_repositories_touch_the_table() -> None:
    reaching = {
        module: uses
        for module, tree in modules()
        if not allowed(module) and (uses := table_uses(with_parents(tree)))
    }
    assert reaching == {}, "give the service the repository it needs (repos.<domain>)"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from api.store.table import Table\n", ["from api.store.table import Table"]),
        ("from api.store import build_table\n", ["from api.store import build_table"]),
        ("from api.store.pages import query_all\n", ["from api.store.pages import query_all"]),
        ("from api.store import leases\n", ["from api.store import leases"]),
        ("items = search.table.query(pk)\n", ["search.table"]),
        ("version = self.search.table\n", ["self.search.table"]),
        ("await repos.table.put(item)\n", ["repos.table"]),
        ("await repos.table.transact_write(ops)\n", []),
        ("await self.repos.table.transact_write(ops)\n", []),
        ("from api.store.table import TransactionCancelled, TxOp\n", []),
        ("agent = await repos.agents.get(email, agent_id)\n", []),
    ],
)
def test_the_check_sees_the_table_reached(source: str, expected: list[str]) -> None:
    assert table_uses(with_parents(ast.parse(source))) == expected


async def test_a_search_engine_hands_out_no_table(tmp_path: Path, clock: FrozenClock) -> None:
    table = SqliteTable(tmp_path / "t.db", "engine-test", load_definition(), clock=clock)
    engine = SearchEngine(SearchRepository(table), None, clock)
    assert not hasattr(engine, "table")
    await engine.aclose()
    await table.close()
