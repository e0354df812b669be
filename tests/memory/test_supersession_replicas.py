"""The supersession race across replicas: two app instances on one store (one SQLite file,
or one DynamoDB Local table), two writers replacing the same memory at the same moment,
one through each. Exactly one wins; the other's reply says so and names the winner; every
memory is still there, readable and found through either instance."""

import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.runtime.conftest import Store, new_agent, running

ROUNDS = 20
T = TypeVar("T")


@pytest.fixture(params=["sqlite", "dynamodb_local"])
def shared(request: pytest.FixtureRequest, tmp_path: Path, clock: FrozenClock) -> Store:
    endpoint = None
    if request.param == "dynamodb_local":
        endpoint = request.getfixturevalue("dynamodb_local").endpoint
    name = f"supersede-{uuid.uuid4().hex[:12]}"
    return Store(request.param, tmp_path / "replicas.db", name, endpoint, clock)


@pytest.fixture
def replicas(
    shared: Store, tmp_path: Path, clock: FrozenClock
) -> Iterator[tuple[TestClient, TestClient]]:
    settings = Settings(
        sqlite_path=tmp_path / "app.db", encryption_key="k" * 40, memory_embedding_backend="static"
    )
    with (
        running(settings, clock, shared.open()) as a,
        running(settings, clock, shared.open()) as b,
    ):
        yield a, b


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


def at_once(
    pool: ThreadPoolExecutor, first: Callable[[], T], second: Callable[[], T]
) -> tuple[T, T]:
    """Both calls, each on a thread of its own, released together."""
    gate = threading.Barrier(2)

    def released(call: Callable[[], T]) -> T:
        gate.wait(timeout=10)
        return call()

    one, two = pool.submit(released, first), pool.submit(released, second)
    return one.result(timeout=60), two.result(timeout=60)


def write(client: TestClient, base: str, content: str, **body: Any) -> httpx2.Response:
    return client.post(base, json={"content": content, **body})


def stored(client: TestClient, base: str, content: str, **body: Any) -> dict[str, Any]:
    written = write(client, base, content, **body)
    assert written.status_code == 201, written.text
    found: dict[str, Any] = written.json()
    return found


def every_memory(client: TestClient, base: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        page = client.get(base, params=params)
        assert page.status_code == 200, page.text
        found.update((m["id"], m) for m in page.json()["memories"])
        cursor = page.json()["cursor"]
        if cursor is None:
            return found


def searched(client: TestClient, base: str, query: str, **params: Any) -> set[str]:
    found = client.get(
        f"{base}/search", params={"query": query, "mode": "lexical", "limit": 100, **params}
    )
    assert found.status_code == 200, found.text
    return {m["id"] for m in found.json()["memories"]}


def assert_all_there(
    replicas: tuple[TestClient, TestClient],
    base: str,
    expected: dict[str, str | None],
    query: str,
) -> None:
    """Every memory made (by id: what replaced it, or None), through either instance: all
    listed, each readable with its end, and search finding the current ones by default and
    every one with history."""
    current = {i for i, by in expected.items() if by is None}
    for client in replicas:
        listed = every_memory(client, base)
        assert {i: m["superseded_by"] for i, m in listed.items()} == expected
        for memory_id, by in expected.items():
            read = client.get(f"{base}/{memory_id}")
            assert read.status_code == 200, read.text
            assert read.json()["superseded_by"] == by
        assert searched(client, base, query) == current
        assert searched(client, base, query, include_history=True) == set(expected)


def test_two_replicas_superseding_one_memory_at_once_make_one_winner(
    replicas: tuple[TestClient, TestClient], pool: ThreadPoolExecutor
) -> None:
    a, b = replicas
    agent = new_agent(a, auto_supersede=False)  # only the writers' own supersessions
    base = f"/agents/{agent}/memory/archival"
    expected: dict[str, str | None] = {}
    for i in range(ROUNDS):
        old = stored(a, base, f"Locker code: {1000 + i} in round {i}")["id"]
        by_a = stored(a, base, f"Locker code: {2000 + i} from a in round {i}")["id"]
        by_b = stored(b, base, f"Locker code: {3000 + i} from b in round {i}")["id"]
        replies = at_once(
            pool,
            partial(a.post, f"{base}/{old}/supersede", json={"by": by_a}),
            partial(b.post, f"{base}/{old}/supersede", json={"by": by_b}),
        )
        statuses = sorted(r.status_code for r in replies)
        assert statuses == [200, 409], [r.text for r in replies]
        won, lost = sorted(replies, key=lambda r: r.status_code)
        winner = by_a if won is replies[0] else by_b
        assert won.json()["id"] == old
        assert won.json()["superseded_by"] == winner
        assert won.json()["superseded_at"] is not None
        refusal = lost.json()
        assert refusal["code"] == "already_superseded"
        assert refusal["details"] == {"memory_id": old, "superseded_by": winner}
        assert winner in refusal["message"]
        expected |= {old: winner, by_a: None, by_b: None}
    assert_all_there(replicas, base, expected, "locker code round")


def test_two_replicas_inserting_replacements_of_one_memory_at_once(
    replicas: tuple[TestClient, TestClient], pool: ThreadPoolExecutor
) -> None:
    """Through the insert route's `supersedes`: both new memories are stored; one reply
    lists the old memory as `replaced`, the other as `not_replaced`, ended by the first."""
    a, b = replicas
    agent = new_agent(a, auto_supersede=False)
    base = f"/agents/{agent}/memory/archival"
    expected: dict[str, str | None] = {}
    for i in range(ROUNDS):
        old = stored(b, base, f"Parking spot: {100 + i} in round {i}")["id"]
        replies = at_once(
            pool,
            partial(
                write, a, base, f"Parking spot: {200 + i} from a in round {i}", supersedes=[old]
            ),
            partial(
                write, b, base, f"Parking spot: {300 + i} from b in round {i}", supersedes=[old]
            ),
        )
        assert [r.status_code for r in replies] == [201, 201], [r.text for r in replies]
        made = [r.json() for r in replies]
        assert made[0]["id"] != made[1]["id"]
        (won,) = [m for m in made if [r["id"] for r in m["replaced"]] == [old]]
        (lost,) = [m for m in made if m is not won]
        assert won["not_replaced"] == []
        assert lost["replaced"] == []
        assert [(r["id"], r["superseded_by"]) for r in lost["not_replaced"]] == [(old, won["id"])]
        for m in made:
            assert m["superseded_by"] is None  # both new memories current
        expected |= {old: won["id"], won["id"]: None, lost["id"]: None}
    assert_all_there(replicas, base, expected, "parking spot round")


def test_the_supersede_route_and_an_insert_racing_for_one_memory(
    replicas: tuple[TestClient, TestClient], pool: ThreadPoolExecutor
) -> None:
    """The two routes against each other: one replacement of the memory, whichever wins."""
    a, b = replicas
    agent = new_agent(a, auto_supersede=False)
    base = f"/agents/{agent}/memory/archival"
    expected: dict[str, str | None] = {}
    for i in range(ROUNDS):
        old = stored(a, base, f"Desk: {10 + i} in round {i}")["id"]
        by_a = stored(a, base, f"Desk: {40 + i} from a in round {i}")["id"]
        routed, inserted = at_once(
            pool,
            partial(a.post, f"{base}/{old}/supersede", json={"by": by_a}),
            partial(write, b, base, f"Desk: {70 + i} from b in round {i}", supersedes=[old]),
        )
        assert inserted.status_code == 201, inserted.text
        new = inserted.json()
        if routed.status_code == 200:
            winner = by_a
            assert new["replaced"] == []
            assert [(r["id"], r["superseded_by"]) for r in new["not_replaced"]] == [(old, by_a)]
        else:
            assert routed.status_code == 409, routed.text
            winner = new["id"]
            assert [r["id"] for r in new["replaced"]] == [old]
            assert routed.json()["details"] == {"memory_id": old, "superseded_by": winner}
        expected |= {old: winner, by_a: None, new["id"]: None}
    assert_all_there(replicas, base, expected, "desk round")
