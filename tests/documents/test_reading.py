"""How a file is split, without a server: passages gathered up to their size, in reading
order, and a file past the passage limit refused at the first passage over it."""

import pytest

from api.documents import reading
from api.documents.errors import DocumentTooManyPassages

LIMITS = reading.Limits(max_bytes=10 * 2**20, max_pages=500, max_passages=5000)


def test_paragraphs_are_gathered_into_passages_of_at_most_their_size() -> None:
    paragraphs = [f"Paragraph {n} " + "word " * 40 for n in range(60)]
    read = reading.read("notes.txt", "text/plain", "\n\n".join(paragraphs).encode(), LIMITS)
    texts = [p.content for p in read.passages]
    assert all(len(t) <= reading.PASSAGE_CHARS + len(paragraphs) for t in texts)
    assert len(texts) > 1
    # Every paragraph once, in order, and no passage that one more paragraph would still fit.
    assert " ".join(texts).replace("\n\n", " ").split() == " ".join(paragraphs).split()
    sizes = [len(t.replace("\n\n", " ")) for t in texts]
    assert all(size + 1 + len(paragraphs[0]) > reading.PASSAGE_CHARS for size in sizes[:-1])


def test_a_file_past_the_passage_limit_is_refused() -> None:
    data = "\n\n".join("x " * 600 for _ in range(50)).encode()  # 50 passages of ~1,200 chars
    with pytest.raises(DocumentTooManyPassages, match="more than 10 passages"):
        reading.read("big.txt", "text/plain", data, reading.Limits(10**8, 500, 10))
