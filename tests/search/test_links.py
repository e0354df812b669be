"""The second hop (`api/search/links.py`) at its edges: which words of a match are names
that lead on, which items they lift and where, and that nothing is reached without a
match to start from or through an item far from the question."""

import numpy as np
import pytest

from api.search import links, tokens
from api.search.documents import Doc
from api.search.index import AgentIndex, Filters, Mode, Query

FLOOR = 0.3


def test_names_are_capitalised_words_but_i_titles_days_and_months() -> None:
    said = "On Monday Mr Patel and I met Ana's sister in March at Oak Lodge."
    assert links.names(said) == ["patel", "ana", "oak", "lodg"]
    assert links.names("i love pizza with extra mozzarella.") == []


def test_a_link_is_a_name_the_question_does_not_say_held_by_a_few_items() -> None:
    held = {"ana": 2, "patel": 1, "jess": 40, "porto": 3}
    said = "Ana and Jess met Mr Patel in Porto."
    found = links.links(said, {"porto"}, lambda t: held.get(t, 0), size=200)
    # Porto is asked about, Patel held by this item alone, Jess by too many to mean one.
    assert found == ["ana"]
    # In a larger index a name may be held by more items and still lead somewhere.
    assert links.links(said, set(), lambda t: held.get(t, 0), size=5000) == [
        "ana",
        "jess",
        "porto",
    ]


def test_linked_lifts_the_closest_holders_below_the_seed_and_only_eligible_ones() -> None:
    score = np.array([1.0, 0.5, 0.0, 0.0, 0.0, 0.0])
    holds = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 0.0])  # item 0 (the seed) and 2-4 hold it
    eligible = np.array([True, True, True, True, False, True])
    closeness = np.array([0.9, 0.8, 0.25, 0.3, 0.9, 0.0])
    lifted = links.linked([0], [["ana"]], lambda _: holds, score, eligible, closeness)
    assert lifted is not None
    share, reached = lifted
    assert reached.tolist() == [False, False, True, True, False, False]  # not 4: not eligible
    assert 1.0 > share[3] > share[2] > 0.5  # below the seed, the closer first
    assert links.linked([0], [[]], lambda _: holds, score, eligible, closeness) is None


# --- in an index --------------------------------------------------------------------

SISTER = "My sister Ana lives in Porto."
NURSE = "Ana is a nurse at the hospital."  # no word of the question
CAT = "Ana's cat is called Miso."  # linked, but nothing like the question
FENCE = "Gareth fixed the fence."
UNNAMED = "My sister lives in Porto."
ASKED = "Where does my sister work?"


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


# Cosines with the question (the first axis): 0.8, 0.25 (within 0.1 of the floor), 0, 0.
VECTORS = {
    SISTER: _unit(0.8, 0.6, 0, 0, 0),
    NURSE: _unit(0.25, 0, 0.968, 0, 0),
    CAT: _unit(0, 0, 0, 1, 0),
    FENCE: _unit(0, 1, 0, 0, 0),
    UNNAMED: _unit(0.8, 0.6, 0, 0, 0),
}


def _index(texts: list[str], *, vectors: bool = True) -> AgentIndex:
    docs = [
        Doc(
            sk=f"Archival#{i:04d}",
            kind="archival",
            text=text,
            created_at=float(i),
            item_id=text,
            vector=VECTORS[text] if vectors else None,
        )
        for i, text in enumerate(texts)
    ]
    return AgentIndex(docs, version=0, dimension=5 if vectors else None)


def _found(index: AgentIndex, text: str, mode: Mode, vector: np.ndarray | None) -> list[str]:
    query = Query(tokens.tokenize(text), vector, mode, FLOOR)
    found = index.search(query, Filters(), now=100.0, offset=0, limit=10)
    assert found.total == len(found.hits)
    scores = [h.score for h in found.hits]
    assert scores == sorted(scores, reverse=True)
    return [h.doc.text for h in found.hits]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_match_s_name_brings_the_item_that_answers_the_rest(mode: Mode) -> None:
    index = _index([SISTER, NURSE, CAT, FENCE])
    # The cat is Ana's too, but far from the question: not brought.
    assert _found(index, ASKED, mode, _unit(1, 0, 0, 0, 0)) == [SISTER, NURSE]


def test_without_a_name_in_common_nothing_is_brought() -> None:
    unnamed = _index([UNNAMED, NURSE, CAT, FENCE])
    assert _found(unnamed, ASKED, "hybrid", _unit(1, 0, 0, 0, 0)) == [UNNAMED]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "lexical"])
def test_no_match_no_second_hop(mode: Mode) -> None:
    index = _index([SISTER, NURSE, CAT, FENCE])
    unrelated = _unit(0, 0, 0, 0, 1)  # like none of them
    assert _found(index, "How do volcanoes form?", mode, unrelated) == []


def test_lexical_search_brings_no_item_that_shares_no_word_with_the_question() -> None:
    """Without vectors there is no meaning to go by: Ana's other items are not brought,
    not even the one that answers."""
    index = _index([SISTER, NURSE, CAT, FENCE], vectors=False)
    assert _found(index, "sister", "lexical", None) == [SISTER]
