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
from fastapi import FastAPI

from api.http.contract import operation_ids as ids
from tests.contract_api.documents import Document, both_modes, operation_ids

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


def test_a_route_without_its_own_operation_id_is_refused_at_start() -> None:
    app = FastAPI(generate_unique_id_function=ids.operation_id)

    async def forgotten() -> None: ...

    with pytest.raises(ids.OperationIdMissing, match=r"/forgotten .*declares no operation_id"):
        app.add_api_route("/forgotten", forgotten)
    app.add_api_route("/named", forgotten, operation_id="named")
    assert app.openapi()["paths"]["/named"]["get"]["operationId"] == "named"
