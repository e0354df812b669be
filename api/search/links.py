"""A second hop, for questions whose answer needs two stored items.

"What's my landlord's mobile number?" finds "Landlord is Mr Patel; rent is £950" and
misses "Mr Patel's mobile: 07700 900 456", which shares nothing with the question but a
name with the first. So the best matches of a search lend the names they mention (not
said in the question) to the items that mention them too: such an item, if its meaning is
not far off the question's, takes a share of the score of the match that named it,
like a message takes a share of the one before it (`index._with_context`).

Names, not any rare word: rare words of a match ("mozzarella", "£950") link it to items
about other things; on our evaluation (bench/recall.py) they found fewer second facts and
pushed more answers of one-fact questions down (docs/search.md, Measuring). Pure
computation, no I/O.
"""

import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from api.search import tokens, when

SEEDS = 2  # the best matches whose names are followed
PER_SEED = 2  # items a match's names may lift, the closest to the question first
SHARE = 0.9  # of the naming match's score: just below it, above weaker matches
# A name held by more items than this (or this share of the index) is no link but a
# topic: the partner or a child of a person mentioned in dozens of notes.
MOST_ITEMS = 5
MOST_SHARE = 0.02
# How far below the similarity floor a linked item may be (as a word in common may be in
# hybrid mode: `index.LEXICAL_SUPPORT`): a linked item answers the rest of the question,
# so it resembles the question a little.
SLACK = 0.1

Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]

_CAPITALISED = re.compile(r"\b[A-Z][^\W_]*")
# Capitalised in English without naming anyone or anything in particular.
_NOT_NAMES = frozenset(when.WEEKDAYS) | frozenset(when.MONTHS) | {"mr", "mrs", "ms", "dr"}


def names(text: str) -> list[str]:
    """The terms of the names a text mentions: its capitalised words ("Mr Patel", "Oak
    Lodge", "Zoe (best friend since uni)"), but "I", titles, days and months."""
    found: list[str] = []
    for match in _CAPITALISED.finditer(text):
        word = match.group(0)
        if word.lower() in _NOT_NAMES or word.lower().removesuffix("s") in _NOT_NAMES:
            continue
        found += [t for t in tokens.tokenize(word) if t not in tokens.STOP_WORDS]
    return found


def links(text: str, asked: set[str], held_by: Callable[[str], int], size: int) -> list[str]:
    """The names of a match that may lead to another item: not said in the question, held
    by another item, and by few."""
    most = max(MOST_ITEMS, int(MOST_SHARE * size))
    return [t for t in dict.fromkeys(names(text)) if t not in asked and 2 <= held_by(t) <= most]


def linked(
    seeds: Sequence[int],
    seed_links: Sequence[list[str]],
    reach: Callable[[list[str]], Floats],
    score: Floats,
    eligible: Mask,
    closeness: Floats,
) -> tuple[Floats, Mask] | None:
    """The items the seeds' names lead to, and the score each takes: for each seed (a
    position, best first) with links, the PER_SEED eligible items holding one of them
    (`reach`: a score > 0 for those) that are closest to the question, each a little
    below SHARE of the seed's score, in that order. None when no seed leads anywhere."""
    lifted = np.zeros(len(score), dtype=np.float64)
    found = np.zeros(len(score), dtype=np.bool_)
    for seed, names_of_seed in zip(seeds, seed_links, strict=True):
        if not names_of_seed:
            continue
        candidates = eligible & (reach(names_of_seed) > 0)
        candidates[list(seeds)] = False  # the seeds are ranked already
        held = np.flatnonzero(candidates)
        closest = held[np.argsort(-closeness[held], kind="stable")[:PER_SEED]]
        for place, i in enumerate(closest.tolist(), 1):
            # Each a step below the one before, so the closest comes first.
            share = SHARE * score[seed] * (1 - 1e-3 * place)
            lifted[i] = max(lifted[i], share)
            found[i] = True
    return (lifted, found) if found.any() else None
