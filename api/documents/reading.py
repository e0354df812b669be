"""A file's text as passages: what type it is, its text (a PDF's page by page, through
pypdf), and that text cut into passages that keep their place: a PDF's page, a Markdown or
HTML file's heading path ("Setup > Linux"). Pure computation, run off the event loop."""

import io
import itertools
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePath

from api.documents.errors import (
    DocumentEmpty,
    DocumentEncrypted,
    DocumentHasNoText,
    DocumentRefused,
    DocumentTooLarge,
    DocumentTooManyPages,
    DocumentTooManyPassages,
    DocumentUnreadable,
    UnsupportedDocumentType,
)
from api.documents.models import MediaType, PassageText

PASSAGE_CHARS = 1000  # a passage's most characters: a few paragraphs, one idea or two
HEADING_SEPARATOR = " > "
SUFFIXES: dict[str, MediaType] = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}
CONTENT_TYPES: dict[str, MediaType] = {
    "text/plain": "text/plain",
    "text/markdown": "text/markdown",
    "text/x-markdown": "text/markdown",
    "text/html": "text/html",
    "application/pdf": "application/pdf",
}
# What a client sends when it does not know: the file name's suffix decides.
UNKNOWN_TYPES = {"", "application/octet-stream"}


@dataclass(frozen=True)
class Limits:
    max_bytes: int
    max_pages: int
    max_passages: int


@dataclass(frozen=True)
class Read:
    media_type: MediaType
    passages: list[PassageText]
    pages: int | None = None


def media_type_of(file_name: str, content_type: str | None) -> MediaType:
    """The file's type from its declared content type, or its name's suffix when the type
    says nothing; UnsupportedDocumentType for anything else."""
    declared = (content_type or "").split(";", 1)[0].strip().lower()
    by_suffix = SUFFIXES.get(PurePath(file_name).suffix.lower())
    if declared in UNKNOWN_TYPES or (declared == "text/plain" and by_suffix is not None):
        # Many clients send text/plain for a .md file.
        found = by_suffix
    else:
        found = CONTENT_TYPES.get(declared)
    if found is None:
        raise UnsupportedDocumentType(
            f"{file_name!r} ({declared or 'no content type'}) is not a type this service "
            "reads: upload text (.txt), Markdown (.md), HTML (.html) or PDF (.pdf).",
            content_type=declared,
        )
    return found


def read(file_name: str, content_type: str | None, data: bytes, limits: Limits) -> Read:
    """The file's passages, or the refusal that says why there are none."""
    if not data:
        raise DocumentEmpty(f"{file_name!r} is empty.")
    if len(data) > limits.max_bytes:
        raise DocumentTooLarge(
            f"{file_name!r} is {len(data)} bytes; a document may be {limits.max_bytes} at most.",
            max_bytes=limits.max_bytes,
        )
    media_type = media_type_of(file_name, content_type)
    pages: int | None = None
    if media_type == "application/pdf":
        pages, sections = _pdf(file_name, data, limits.max_pages)
    else:
        text = _text(file_name, data)
        if media_type == "text/markdown":
            sections = list(_markdown(text))
        elif media_type == "text/html":
            sections = _html(text)
        else:
            sections = [Section(text)]
    # One past the limit is enough to refuse: a file of millions is not split to the end.
    every = (p for s in sections for p in _passages(s))
    passages = list(itertools.islice(every, limits.max_passages + 1))
    if not passages:
        raise DocumentHasNoText(f"{file_name!r} holds no text to search.")
    if len(passages) > limits.max_passages:
        raise DocumentTooManyPassages(
            f"{file_name!r} makes more than {limits.max_passages} passages, the most a "
            "document may make.",
            max_passages=limits.max_passages,
        )
    return Read(media_type, passages, pages)


@dataclass(frozen=True)
class Section:
    text: str
    page: int | None = None
    heading: str | None = None


def _text(file_name: str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentUnreadable(
            f"{file_name!r} is not UTF-8 text; save it as UTF-8 and upload it again."
        ) from None


def _pdf(file_name: str, data: bytes, max_pages: int) -> tuple[int, list[Section]]:
    # pypdf is imported when a PDF comes: most processes never read one.
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if not data.startswith(b"%PDF-"):
        raise DocumentUnreadable(f"{file_name!r} is not a PDF file (it does not start with %PDF-).")
    # pypdf logs a warning for every oddity of a file; what matters reaches the client.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise DocumentEncrypted(
                f"{file_name!r} is encrypted; upload a copy without a password."
            )
        count = len(reader.pages)
        if count > max_pages:
            raise DocumentTooManyPages(
                f"{file_name!r} has {count} pages; a document may have {max_pages} at most.",
                max_pages=max_pages,
            )
        sections = [
            Section(page.extract_text() or "", page=number)
            for number, page in enumerate(reader.pages, 1)
        ]
    except DocumentRefused:
        raise
    except PyPdfError as e:
        raise DocumentUnreadable(f"{file_name!r} could not be read as a PDF: {e}") from None
    except Exception as e:
        # A damaged file trips pypdf's parser in ways its own errors do not cover (a bad
        # stream's zlib error, a recursion, a missing key): unreadable, never a 500.
        raise DocumentUnreadable(
            f"{file_name!r} could not be read as a PDF ({type(e).__name__})."
        ) from None
    return count, sections


_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _markdown(text: str) -> Iterator[Section]:
    """Sections under each heading, with the path of headings above them."""
    path: list[tuple[int, str]] = []
    lines: list[str] = []
    fenced = False

    def section() -> Section:
        heading = HEADING_SEPARATOR.join(title for _, title in path) or None
        return Section("\n".join(lines), heading=heading)

    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        found = None if fenced else _ATX.match(line)
        if found is None:
            lines.append(line)
            continue
        if any(line.strip() for line in lines):
            yield section()
        lines = []
        level, title = len(found.group(1)), found.group(2).strip()
        path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, title)]
    if any(line.strip() for line in lines):
        yield section()


_HTML_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HTML_BLOCKS = frozenset(
    {"p", "div", "li", "br", "tr", "section", "article", "pre", "blockquote", "table"}
)
_HTML_SKIPPED = frozenset({"script", "style", "head", "template", "noscript"})


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = []
        self._path: list[tuple[int, str]] = []
        self._parts: list[str] = []
        self._heading: list[str] | None = None
        self._level = 0
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HTML_SKIPPED:
            self._skipping += 1
        elif tag in _HTML_HEADINGS:
            self._flush()
            self._heading, self._level = [], _HTML_HEADINGS[tag]
        elif tag in _HTML_BLOCKS:
            self._parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HTML_SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _HTML_HEADINGS and self._heading is not None:
            title = " ".join("".join(self._heading).split())
            if title:
                self._path = [(lvl, t) for lvl, t in self._path if lvl < self._level]
                self._path.append((self._level, title))
            self._heading = None
        elif tag in _HTML_BLOCKS:
            self._parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._heading is not None:
            self._heading.append(data)
        else:
            self._parts.append(data)

    def _flush(self) -> None:
        text = "".join(self._parts)
        if text.strip():
            heading = HEADING_SEPARATOR.join(t for _, t in self._path) or None
            self.sections.append(Section(text, heading=heading))
        self._parts = []

    def close(self) -> None:
        super().close()
        self._flush()


def _html(text: str) -> list[Section]:
    parser = _HtmlText()
    parser.feed(text)
    parser.close()
    return parser.sections


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _pieces(paragraph: str) -> Iterator[str]:
    """A paragraph in pieces of at most PASSAGE_CHARS: by sentence, then by word."""
    if len(paragraph) <= PASSAGE_CHARS:
        yield paragraph
        return
    for sentence in _SENTENCE.split(paragraph):
        while len(sentence) > PASSAGE_CHARS:
            cut = sentence.rfind(" ", 0, PASSAGE_CHARS)
            cut = cut if cut > 0 else PASSAGE_CHARS
            yield sentence[:cut]
            sentence = sentence[cut:].lstrip()
        if sentence:
            yield sentence


def _passages(section: Section) -> Iterator[PassageText]:
    """A section's paragraphs gathered into passages of at most PASSAGE_CHARS; each starts
    with its heading path, so a search by a section's name finds it and the model reads
    where it is from."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", section.text)]
    pieces = [piece for p in paragraphs if p for piece in _pieces(p)]
    gathered: list[str] = []
    size = 0  # of the pieces gathered, a space between each (kept, not summed each time)
    for piece in pieces:
        if gathered and size + 1 + len(piece) > PASSAGE_CHARS:
            yield _passage(section, "\n\n".join(gathered))
            gathered, size = [], 0
        size += len(piece) + (1 if gathered else 0)
        gathered.append(piece)
    if gathered:
        yield _passage(section, "\n\n".join(gathered))


def _passage(section: Section, body: str) -> PassageText:
    content = f"{section.heading}\n{body}" if section.heading else body
    return PassageText(content=content, page=section.page, heading=section.heading)
