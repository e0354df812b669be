"""Reading an export file from disk: plain blocking code, run on a worker thread (the whole
of pass 1, and pass 2 a batch of records at a time), never on the event loop."""

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from api.transfer.checker import Checker, refuse
from api.transfer.errors import InvalidImportFile
from api.transfer.format import (
    FORMAT,
    LINE,
    MAX_LINE_BYTES,
    VERSION,
    AgentRecord,
    Digest,
    Header,
    Record,
    Trailer,
)

SNIFF_BYTES = 65_536


@dataclass(frozen=True)
class Plan:
    """What pass 1 found: the file is whole and every record can be written."""

    header: Header
    agent: AgentRecord
    counts: dict[str, int]

    @property
    def records(self) -> int:
        return sum(self.counts.values())


# Python's JSON reader recurses once per level of nesting: a line nested thousands deep
# is refused, not read (no record of ours nests more than a few levels).
TOO_DEEP = "The line is nested too deeply to be read as JSON."


def is_export_file(path: Path) -> bool:
    """Whether the file starts as ours does (a header line naming our format); anything else
    is read as a Letta agent file."""
    with path.open("rb") as f:
        first = f.readline(SNIFF_BYTES)
    try:
        value = json.loads(first)
    except ValueError:
        return False
    except RecursionError:
        raise refuse(1, TOO_DEEP) from None
    return isinstance(value, dict) and value.get("type") == "header"


def _read_line(f: IO[bytes], number: int) -> bytes:
    raw = f.readline(MAX_LINE_BYTES + 1)
    if len(raw) > MAX_LINE_BYTES:
        raise refuse(number, f"The line is longer than {MAX_LINE_BYTES} bytes.")
    return raw


def _message(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def _parse(raw: bytes, number: int) -> Header | Record | Trailer:
    try:
        return LINE.validate_json(raw)
    except ValidationError as e:
        raise refuse(number, f"Not a record of this format ({_message(e)}).") from None


def _header(raw: bytes) -> Header:
    try:
        value = json.loads(raw)
    except ValueError:
        raise refuse(1, "The file does not start with a header line.") from None
    except RecursionError:
        raise refuse(1, TOO_DEEP) from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise refuse(1, f"The file is not an {FORMAT} file.")
    version = value.get("version")
    if isinstance(version, int) and version > VERSION:
        raise refuse(
            1,
            f"The file is version {version} of the format, made by a newer server; this one "
            f"reads versions up to {VERSION}.",
        )
    parsed = _parse(raw, 1)
    if not isinstance(parsed, Header):
        raise refuse(1, "The file does not start with a header line.")
    return parsed


def check_file(
    path: Path, progress: Callable[[int], None] = lambda n: None, copy: IO[bytes] | None = None
) -> Plan:
    """Pass 1: the whole file read, parsed, checked and its digest compared; the plan, or
    InvalidImportFile with the line and what is wrong. Every byte read is also written to
    `copy` when given: pass 2 then reads exactly what was checked."""
    digest = Digest()
    checker = Checker()
    trailer: Trailer | None = None
    number = 1
    with path.open("rb") as f:
        first = _read_line(f, 1)
        header = _header(first)
        digest.add(first)
        if copy is not None:
            copy.write(first)
        while raw := _read_line(f, number + 1):
            number += 1
            if copy is not None:
                copy.write(raw)
            if trailer is not None:
                if raw.strip():
                    raise refuse(number, "There is more after the trailer line.")
                continue
            parsed = _parse(raw, number)
            if isinstance(parsed, Trailer):
                trailer = parsed
                continue
            if isinstance(parsed, Header):
                raise refuse(number, "A second header line.")
            checker.check(parsed, number)
            digest.add(raw, parsed.type)
            progress(1)
    if trailer is None:
        raise refuse(
            None,
            f"The file ends after line {number} without its trailer line: it was cut short "
            "(an interrupted download or export).",
        )
    if trailer.sha256 != digest.hexdigest():
        raise refuse(
            None,
            "The file's content does not match the digest in its trailer: it was changed or "
            "damaged after it was exported.",
        )
    counted = {k: v for k, v in digest.counts.items() if v}
    if {k: v for k, v in trailer.counts.items() if v} != counted:
        raise refuse(None, "The file's record counts do not match its trailer's.")
    return Plan(header, checker.finish(), counted)


class RecordFile:
    """Pass 2: the records of a file checked by `check_file`, a batch at a time."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self._number = 0
        self._done = False

    def next_batch(self, size: int) -> list[Record]:
        """Up to `size` records; [] once the trailer is reached."""
        batch: list[Record] = []
        while len(batch) < size and not self._done:
            raw = _read_line(self._file, self._number + 1)
            self._number += 1
            if not raw:
                break
            parsed = _parse(raw, self._number)
            if isinstance(parsed, Trailer):
                self._done = True
                break
            if not isinstance(parsed, Header):
                batch.append(parsed)
        return batch

    def close(self) -> None:
        self._file.close()


__all__ = ["InvalidImportFile", "Plan", "RecordFile", "check_file", "is_export_file"]
