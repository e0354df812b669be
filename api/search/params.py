"""The words a search looks for, under one name on every search route: `query`, as archival
search and seeds 002 and 004 name it. Message search named it `q`, which every search
route still takes as an alias (left out of the document); a request giving both with
different values is refused, never answered for one of them."""

import re
from collections.abc import Mapping
from datetime import UTC, datetime, time
from typing import Annotated, Any

from pydantic import AfterValidator, AliasChoices, BeforeValidator

from api.errors import BadRequest

MAX_QUERY_CHARS = 2000  # what a search may ask, in characters
NAME = "query"
ALIAS = "q"
# Validation aliases: `query`, else `q`. The document names only the first.
NAMES = AliasChoices(NAME, ALIAS)
DESCRIPTION = "What to look for (`q` is taken too, as an alias)."


class ConflictingQuery(BadRequest):
    code = "conflicting_query"

    def __init__(self) -> None:
        super().__init__(
            f"Give the search query once: `{NAME}` and `{ALIAS}` (its alias) were both given, "
            "with different values."
        )


def check_one(given: Mapping[str, Any]) -> None:
    """ConflictingQuery when `given` (a query string, a body) holds both names, with
    different values; the same value under both names is one query."""
    if NAME in given and ALIAS in given and given[NAME] != given[ALIAS]:
        raise ConflictingQuery()


_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _whole_day(value: Any) -> Any:
    """A date alone means the whole of that day: what was true at its end (UTC)."""
    if isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
        day = datetime.fromisoformat(value.strip()).date()
        return datetime.combine(day, time.max, tzinfo=UTC)
    return value


def _day_start(value: Any) -> Any:
    """A date alone, for when something became true, means from the start of that day:
    "as of" any moment of that day finds it."""
    if isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
        return datetime.combine(datetime.fromisoformat(value.strip()).date(), time.min, UTC)
    return value


def _in_utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


AS_OF_DESCRIPTION = (
    "What was true at this moment: a date (`2025-03-02`, the end of that day, UTC) or a "
    "date and time (ISO 8601; UTC unless it says otherwise). Default: now."
)
# A moment, as every route that answers "as of" takes it (a type for query strings and
# bodies alike).
Moment = Annotated[datetime, BeforeValidator(_whole_day), AfterValidator(_in_utc)]
# When something became true, as writers give it (`valid_from`).
Since = Annotated[datetime, BeforeValidator(_day_start), AfterValidator(_in_utc)]
