"""Questions whose answer needs two stored items, over HTTP with the default model: the
item a question describes ("my sister") names what the other says something of ("Ana"),
and search returns both among hundreds of everyday notes. The second hop that finds the
other is tested at its edges too: it starts only from a match and follows only names."""

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.search.test_recall_quality import (
    agent_with,
    default_model_server,
    everyday_notes,
    search_archival,
)

# Each pair: a note that says who or what the question is about, and one that says the
# asked thing of them by name only.
SISTER = "My sister Ana lives in Porto."
SISTER_WORK = "Ana works as a nurse at São João hospital."
PLUMBER = "Our plumber is Kieran Doyle; he fitted the new boiler."
PLUMBER_PHONE = "Kieran's mobile is 07700 900 811, texts only."
GODSON = "My godson is Rafferty, my cousin Lou's boy."
GODSON_GIFT = "Rafferty wants a telescope for his birthday."
PAIRS = {
    "Where does my sister work?": (SISTER, SISTER_WORK),
    "What's our plumber's phone number?": (PLUMBER, PLUMBER_PHONE),
    "What would my godson like as a present?": (GODSON, GODSON_GIFT),
}
# Semantic search finds the godson's note by meaning only if it is close enough to be a
# match of its own (it is not: 0.24), and without a first match there is no second.
SEMANTIC = ["Where does my sister work?", "What's our plumber's phone number?"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    yield from default_model_server(tmp_path_factory, "two-facts")


@pytest.fixture(scope="module")
def agent(client: TestClient) -> str:
    """An agent holding 300 everyday notes with the pairs' notes among them, apart."""
    notes = everyday_notes()
    paired = [text for pair in PAIRS.values() for text in pair]
    for at, text in zip(range(40, 300, 45), paired, strict=False):
        notes.insert(at, text)
    return agent_with(client, notes, "Two facts")


@pytest.mark.parametrize(
    ("query", "mode"),
    [(q, "hybrid") for q in PAIRS] + [(q, "semantic") for q in SEMANTIC],
)
def test_both_items_of_a_two_fact_question_are_in_the_top_five(
    client: TestClient, agent: str, query: str, mode: str
) -> None:
    found = search_archival(client, agent, query, mode, limit=5)
    describing, answering = PAIRS[query]
    assert describing in found, (mode, found)
    assert answering in found, (mode, found)
    # The item reached through the other comes after it: it was found through it.
    assert found.index(describing) < found.index(answering), (mode, found)


@pytest.mark.parametrize(
    "query",
    ["How do volcanoes form?", "Who won the cup final?", "What's my grandad's shoe size?"],
)
def test_a_question_nothing_answers_still_finds_nothing(
    client: TestClient, agent: str, query: str
) -> None:
    """No match, no second hop: the names in the notes lead nowhere on their own."""
    for mode in ("hybrid", "semantic"):
        assert search_archival(client, agent, query, mode, limit=10) == [], (query, mode)


def test_a_question_naming_the_person_needs_no_hop(client: TestClient, agent: str) -> None:
    """Asked by name, the answer is a match of its own and comes first."""
    found = search_archival(client, agent, "Where does Ana work?", "hybrid", limit=5)
    assert found[0] == SISTER_WORK, found
