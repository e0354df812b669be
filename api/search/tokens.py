"""Words as BM25 sees them: lower-cased, stop words dropped, Snowball-stemmed, so that "cups"
meets "cup" and "visited" meets "visit". Queries and documents go through the same function."""

import re
from functools import lru_cache

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

_WORD = re.compile(r"[^\W_]+")
# Lucene's English list plus the words of a question and of chat ("what did I do", "my
# dog"): they would make nearly every message match.
_CHAT_WORDS = """about after again all also am any because been before being both can could
did do does doing down during each few from further had has have having
he her here hers herself him himself his how i im i'm its itself
just me more most my myself nor now off once only other ought our
ours ourselves out over own same she should so some than thats them themselves
those through too under until up very we were what whats when where which
while who whom why would you your yours yourself yourselves"""
# What contractions leave once split at the apostrophe ("what's", "don't", "I'll").
_CONTRACTIONS = "s t d ll re ve m"
STOP_WORDS = (
    frozenset(STOPWORDS_EN) | frozenset(_CHAT_WORDS.split()) | frozenset(_CONTRACTIONS.split())
)
_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stem: str = _stemmer.stemWord(word)
    return stem


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def tokenize(text: str) -> list[str]:
    """BM25's terms of a text; a text of stop words only keeps them, so that a search for
    "it" still means something."""
    found = words(text)
    kept = [w for w in found if w not in STOP_WORDS] or found
    return [_stem(w) for w in kept]
