"""Operation ids are what generated clients name their methods after: each is unique,
readable, and the same as tests/contract_api/operation_ids.txt, so that renaming an
endpoint (which renames its operation) fails here rather than in every client. When the
change is meant, regenerate the list (docs/api-contract.md):

    uv run --frozen python -m tests.contract_api.documents > tests/contract_api/operation_ids.txt
"""

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.contract_api.documents import Document, api_routes, both_modes, operation_ids

PINNED = Path(__file__).with_name("operation_ids.txt")
READABLE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


@pytest.fixture(scope="module")
def documents() -> dict[str, Document]:
    return both_modes()


def test_operation_ids_are_unique_and_readable(documents: dict[str, Document]) -> None:
    for mode, doc in documents.items():
        operations = [o for methods in doc["paths"].values() for o in methods.values()]
        ids = Counter(operation["operationId"] for operation in operations)
        assert [i for i, n in ids.items() if n > 1] == [], mode
        assert [i for i in ids if not READABLE.match(i)] == [], mode
        assert all(operation.get("tags") for operation in operations), mode


def test_operation_ids_are_the_pinned_ones(documents: dict[str, Document]) -> None:
    pinned = PINNED.read_text().splitlines()
    current = operation_ids(documents)
    assert set(current) - set(pinned) == set(), "new or renamed: regenerate the list"
    assert set(pinned) - set(current) == set(), "gone or renamed: regenerate the list"


def test_an_operation_is_the_same_in_both_modes(documents: dict[str, Document]) -> None:
    by_operation: dict[str, set[str]] = {}
    for line in operation_ids(documents):
        method, path, operation_id = line.split()
        by_operation.setdefault(f"{method} {path}", set()).add(operation_id)
    assert {name: ids for name, ids in by_operation.items() if len(ids) > 1} == {}


def test_every_route_declares_its_own_operation_id() -> None:
    """Declared on each route, never derived from where its code lives: moving a module
    or renaming a function renames nothing a client sees."""
    for mode in ("local", "google"):
        undeclared = [
            f"{sorted(route.methods or ())} {route.path}"
            for route in api_routes(mode)
            if route.operation_id is None
        ]
        assert undeclared == [], mode
