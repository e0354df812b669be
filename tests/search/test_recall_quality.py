"""What recall is judged by, over HTTP with the default model: a plain paraphrase found first
among hundreds of everyday notes, and nothing at all for a question nothing answers."""

import itertools
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.config import Settings
from api.kit.clock import FrozenClock
from tests.runtime.conftest import new_agent, running

PIZZA = "I love pizza with extra mozzarella."

# Everyday notes of the kind people keep, made from a few parts so that there are
# hundreds and none of them says what the person likes to eat.
_CHORES = [
    "The {thing} needs {fix} before {when}.",
    "Remember to {act} the {thing} by {when}.",
    "Ask {person} whether the {thing} can wait until {when}.",
]
_THINGS = {
    "car": ["new tyres", "an oil change", "its MOT", "a wash", "new wiper blades"],
    "boiler": ["a service", "a new valve", "bleeding"],
    "garden fence": ["a coat of paint", "two new posts"],
    "bike": ["a new chain", "its brakes adjusted", "the tyres pumped"],
    "kitchen tap": ["a new washer", "fixing"],
    "roof gutter": ["clearing", "a new bracket"],
    "laptop": ["a backup", "the update installed", "a new battery"],
    "lawn": ["mowing", "reseeding"],
}
_ACTS = ["check", "book", "sort out", "look at"]
_PEOPLE = ["Sam", "my brother", "the landlord", "Priya", "the neighbour"]
_WHENS = ["winter", "Friday", "the end of the month", "the holidays", "next week", "spring"]
_ERRANDS = [
    "Renew the {doc} before {when}.",
    "Send {person} the {doc} by {when}.",
    "The {doc} is in the blue folder; {person} has a copy.",
]
_DOCS = ["passport", "car insurance", "gym membership", "library card", "tax return", "lease"]
_WORK = [
    "Finish the {task} for {person} by {when}.",
    "The {task} moved to {when}; tell {person}.",
    "{person} is reviewing the {task}, due {when}.",
]
_TASKS = ["budget report", "quarterly slides", "hiring plan", "client invoice", "team rota"]


def everyday_notes() -> list[str]:
    notes: list[str] = []
    for (thing, fixes), template in itertools.product(_THINGS.items(), _CHORES):
        for i, fix in enumerate(fixes):
            notes.append(
                template.format(
                    thing=thing,
                    fix=fix,
                    act=_ACTS[i % len(_ACTS)],
                    person=_PEOPLE[(i + len(notes)) % len(_PEOPLE)],
                    when=_WHENS[(i + len(notes)) % len(_WHENS)],
                )
            )
    for doc, template, when in itertools.product(_DOCS, _ERRANDS, _WHENS):
        notes.append(template.format(doc=doc, person=_PEOPLE[len(notes) % 5], when=when))
    for task, template, when in itertools.product(_TASKS, _WORK, _WHENS):
        notes.append(template.format(task=task, person=_PEOPLE[len(notes) % 5], when=when))
    notes += [
        f"Meeting with {person} on {day} at {hour}." if i % 2 else f"{person}'s birthday is {day}."
        for i, (person, day, hour) in enumerate(
            itertools.product(
                _PEOPLE, ["Monday", "Tuesday", "Thursday", "the 3rd", "the 14th"], ["9", "11"]
            )
        )
    ]
    notes = list(dict.fromkeys(notes))
    assert len(notes) >= 300, len(notes)
    return notes[:300]


@pytest.fixture(scope="module")
def notes() -> list[str]:
    return everyday_notes()


def default_model_server(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> Iterator[TestClient]:
    """A server on a fresh SQLite file with the default embedding model, for a module
    fixture (`yield from`)."""
    directory = tmp_path_factory.mktemp(name)
    settings = Settings(sqlite_path=directory / f"{name}.db", encryption_key="k" * 40)
    assert settings.memory_embedding_backend == "onnx"  # the default is what is measured
    with running(settings, FrozenClock(float(int(time.time())))) as client:
        yield client


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One server for the module: its tests only search, each in an agent of its own."""
    yield from default_model_server(tmp_path_factory, "recall")


@pytest.fixture(scope="module")
def everyday_agent(client: TestClient, notes: list[str]) -> str:
    """An agent holding the everyday notes and the pizza memory, searched by every
    question below (none of them writes)."""
    return agent_with(client, [*notes, PIZZA], "Everyday")


def agent_with(client: TestClient, notes: list[str], name: str) -> str:
    agent = new_agent(client, name)
    for text in notes:
        stored = client.post(f"/agents/{agent}/memory/archival", json={"content": text})
        assert stored.status_code == 201, stored.text
    return agent


def search_archival(
    client: TestClient, agent: str, query: str, mode: str, limit: int | None = None
) -> list[str]:
    """The contents an archival search returns, in order (the route's own limit if none)."""
    params: dict[str, str | int] = {"query": query, "mode": mode}
    if limit is not None:
        params["limit"] = limit
    found = client.get(f"/agents/{agent}/memory/archival/search", params=params)
    assert found.status_code == 200, found.text
    return [m["content"] for m in found.json()["memories"]]


def test_a_paraphrase_is_found_first_among_hundreds_of_everyday_notes(
    client: TestClient, notes: list[str]
) -> None:
    agent = agent_with(client, [*notes[:150], PIZZA, *notes[150:]], "Pizza in the middle")
    for query in ("what food do I like?", "favourite food"):
        for mode in ("hybrid", "semantic"):
            found = search_archival(client, agent, query, mode)
            assert found[:1] == [PIZZA], (query, mode, found)


@pytest.mark.parametrize(
    "query",
    [
        "What is my blood type?",
        "which football club do I support",
        "favourite colour",
        "What instrument do I play?",
        "my dog's name",
        "Where did I go to university?",
    ],
)
def test_a_question_nothing_answers_finds_nothing(
    client: TestClient, everyday_agent: str, query: str
) -> None:
    for mode in ("hybrid", "semantic"):
        assert search_archival(client, everyday_agent, query, mode) == [], (query, mode)
