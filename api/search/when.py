"""The time a question names ("last May", "two weeks ago", "at Easter"), as a span of
time, and whether it asks how things are now.

Written here rather than taken from a date library: parsers such as dateparser turn a
phrase into one moment, but ranking needs the span the phrase covers ("last summer" is
three months, "in March 2025" a month, "yesterday morning" a day) and the usual reading
of a question asked at a given time ("in May" asked in March means last May). All times
are UTC, since the server knows no user's time zone; day spans are widened by half a day
on each side for that reason.
"""

import re
from datetime import UTC, date, datetime, timedelta

Span = tuple[float, float]

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 4,
}
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
HALF_DAY = 12 * 3600.0

_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_PART = (
    r"(?:(early|mid|middle of|late|the start of|the beginning of|the end of|start of|"
    r"beginning of|end of)[ -])?"
)
_YEAR = r"((?:19|20)\d\d)"
_COUNT = (
    r"(\d+|a couple of|couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|"
    r"eight|nine|ten)"
)

_NOW = re.compile(
    r"\b(now|nowadays|currently|current|these days|at the moment|still|any ?more|latest|"
    r"most recent(ly)?|lately|recently|so far|at present|right now)\b"
)


def _day(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _days(start: date, end: date) -> Span:
    """Whole days from `start` to `end` (excluded), widened by half a day each side."""
    return _day(start).timestamp() - HALF_DAY, _day(end).timestamp() + HALF_DAY


def _month_span(year: int, month: int, part: str | None = None) -> Span:
    first = date(year, month, 1)
    following = date(year + month // 12, month % 12 + 1, 1)
    if part is None:
        return _days(first, following)
    if part in ("early", "the start of", "the beginning of", "start of", "beginning of"):
        return _days(first, date(year, month, 11))
    if part in ("mid", "middle of"):
        return _days(date(year, month, 10), date(year, month, 21))
    return _days(date(year, month, 20), following)  # late, the end of


def _latest_year_of(month: int, today: date, *, before_this_month: bool) -> int:
    """The year of the latest `month` that is not in the future (nor this month, when
    `before_this_month`)."""
    if month < today.month or (month == today.month and not before_this_month):
        return today.year
    return today.year - 1


def _season_span(season: str, year: int) -> Span:
    first = SEASONS[season]
    if first == 12:  # winter runs from December into the next year
        return _days(date(year, 12, 1), date(year + 1, 3, 1))
    return _days(date(year, first, 1), date(year, first + 3, 1))


def _latest_season(season: str, today: date, qualifier: str | None) -> Span:
    first = SEASONS[season]
    # The year the season starts in, for the latest one that has begun.
    year = today.year if (today.month >= first) else today.year - 1
    if first == 12 and today.month < 3:
        year = today.year - 1  # in January, "this winter" began last December
    if qualifier == "last":
        _, end = _season_span(season, year)
        if end > _day(today).timestamp():  # still under way: the one before
            year -= 1
    return _season_span(season, year)


def _easter(year: int) -> date:
    """Gregorian Easter Sunday (the anonymous Gregorian algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    ell = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * ell) // 451
    month = (h + ell - 7 * m + 114) // 31
    day = (h + ell - 7 * m + 114) % 31 + 1
    return date(year, month, day)


def _thanksgiving(year: int) -> date:
    first = date(year, 11, 1)
    return first + timedelta(days=(3 - first.weekday()) % 7 + 21)


def _holiday(name: str, year: int) -> tuple[date, date]:
    """[first day, day after the last) of a holiday in a year."""
    match name:
        case "new year's eve":
            return date(year, 12, 31), date(year + 1, 1, 1)
        case "new year's day" | "new year":
            return date(year, 1, 1), date(year, 1, 2)
        case "christmas eve":
            return date(year, 12, 24), date(year, 12, 25)
        case "christmas holidays" | "the holidays":
            return date(year, 12, 20), date(year + 1, 1, 3)
        case "christmas" | "christmas day" | "xmas":
            return date(year, 12, 24), date(year, 12, 27)
        case "valentine's day" | "valentine's" | "valentines day" | "valentines":
            return date(year, 2, 14), date(year, 2, 15)
        case "easter":
            sunday = _easter(year)
            return sunday - timedelta(days=2), sunday + timedelta(days=2)
        case "thanksgiving":
            thursday = _thanksgiving(year)
            return thursday - timedelta(days=1), thursday + timedelta(days=4)
        case "halloween":
            return date(year, 10, 31), date(year, 11, 1)
    raise ValueError(name)


_HOLIDAYS = (
    r"(new year'?s eve|new year'?s day|christmas eve|christmas holidays|christmas day|"
    r"christmas|xmas|valentine'?s day|valentines day|valentine'?s|easter|thanksgiving|"
    r"halloween|the holidays)"
)


def _normal_holiday(text: str) -> str:
    name = text.replace("new years", "new year's").replace("valentines", "valentine's")
    return "christmas holidays" if name == "the holidays" else name


def _count(text: str) -> int:
    return int(text) if text.isdigit() else NUMBERS[text]


def _qualified_year(text: str, today: date) -> int | None:
    """A year the question names as such: "last year", "two years ago", "in 2024" (a bare
    number is a year only after a preposition: "2000 mg" is not)."""
    if re.search(r"\blast year\b", text):
        return today.year - 1
    if re.search(r"\bthis year\b", text):
        return today.year
    found = re.search(r"\b" + _COUNT + r" years? ago\b", text)
    if found:
        return today.year - _count(found.group(1))
    found = re.search(r"\b(?:in|of|since|until|during|from|around) " + _YEAR + r"\b", text)
    return int(found.group(1)) if found else None


def span(question: str, now: float) -> Span | None:
    """The span of time the question names, or None; the most specific phrase wins. A
    phrase naming a time no calendar holds ("3000 years ago") names none."""
    try:
        return _span(question, now)
    except (ValueError, OverflowError):
        return None


def _span(question: str, now: float) -> Span | None:
    text = question.lower().replace("\u2019", "'")  # a typographic apostrophe
    today = datetime.fromtimestamp(now, UTC).date()
    year = _qualified_year(text, today)

    # A holiday ("at Easter last year", "on New Year's Eve", "Christmas 2024").
    found = re.search(r"\b" + _HOLIDAYS + r"\b(?: " + _YEAR + r"\b)?", text)
    if found:
        name = _normal_holiday(found.group(1))
        if found.group(2):
            year = int(found.group(2))
        if year is None:
            year = today.year
            if _day(today).timestamp() < _day(_holiday(name, year)[0]).timestamp():
                year -= 1  # not come yet this year: the last one
        start, end = _holiday(name, year)
        return _days(start, end)

    # Days counted back ("yesterday", "two days ago", "three weeks ago").
    if re.search(r"\b(yesterday|last night)\b", text):
        return _days(today - timedelta(days=1), today)
    if re.search(r"\b(today|this morning|tonight|this afternoon|this evening)\b", text):
        return _days(today, today + timedelta(days=1))
    found = re.search(r"\b" + _COUNT + r" (day|week|month|year)s? ago\b", text)
    if found:
        count, unit = _count(found.group(1)), found.group(2)
        if unit == "day":
            day = today - timedelta(days=count)
            return _days(day, day + timedelta(days=1))
        if unit == "week":
            middle = today - timedelta(weeks=count)
            return _days(middle - timedelta(days=4), middle + timedelta(days=4))
        if unit == "month":
            middle = today - timedelta(days=30 * count)
            return _days(middle - timedelta(days=16), middle + timedelta(days=16))
        back = today.year - count
        return _days(date(back, 1, 1), date(back + 1, 1, 1))

    # A month, perhaps a part of it and a year ("early March 2025", "last May").
    found = re.search(
        r"\b" + _PART + r"(?:(last|this|past) )?" + _MONTH + r"\b(?: (?:of )?" + _YEAR + r")?",
        text,
    )
    if found and _is_month(found, question):
        part, qualifier, month_name, month_year = found.groups()
        month = MONTHS[month_name]
        if month_year:
            chosen = int(month_year)
        elif year is not None:
            chosen = year
        elif qualifier == "this":
            chosen = today.year
        else:
            chosen = _latest_year_of(month, today, before_this_month=qualifier == "last")
        return _month_span(chosen, month, part)

    # A season ("last summer", "the spring of 2025", "this winter").
    found = re.search(
        r"\b(?:(last|this|past) |(?:in|during|over|through|since|until|of) (?:the )?)"
        r"(spring|summer|autumn|fall|winter)\b(?: (?:of )?" + _YEAR + r")?"
        r"|\b(spring|summer|autumn|fall|winter) (?:of )?" + _YEAR + r"\b",
        text,
    )
    if found:
        qualifier, season, season_year = found.group(1), found.group(2), found.group(3)
        if season is None:  # "spring 2025"
            season, season_year = found.group(4), found.group(5)
        if season_year or (year is not None and qualifier is None):
            return _season_span(season, int(season_year) if season_year else year or today.year)
        return _latest_season(season, today, qualifier)

    # A day of the week ("on Tuesday", "last Friday").
    found = re.search(
        r"\b(next |every |each )?(?:last |on |this past )?(" + "|".join(WEEKDAYS) + r")(s)?\b",
        text,
    )
    if found and not found.group(1) and not found.group(3):  # not "next Friday", "Mondays"
        back = (today.weekday() - WEEKDAYS.index(found.group(2))) % 7 or 7
        day = today - timedelta(days=back)
        return _days(day, day + timedelta(days=1))

    # Weeks, months and years as such.
    calendar = [
        ("last week", today - timedelta(days=today.weekday() + 7), 7),
        ("this week", today - timedelta(days=today.weekday()), 7),
        ("past week", today - timedelta(days=7), 8),
    ]
    for phrase, first, days in calendar:
        if phrase in text:
            return _days(first, first + timedelta(days=days))
    if re.search(r"\blast month\b", text):
        previous = today.replace(day=1) - timedelta(days=1)
        return _month_span(previous.year, previous.month)
    if re.search(r"\bthis month\b", text):
        return _month_span(today.year, today.month)
    found = re.search(r"\b(the start|the beginning|the end) of (last|this) year\b", text)
    if found:
        chosen = today.year - (found.group(2) == "last")
        if found.group(1) == "the end":
            return _days(date(chosen, 10, 1), date(chosen + 1, 1, 1))
        return _days(date(chosen, 1, 1), date(chosen, 4, 1))
    if year is not None:
        return _days(date(year, 1, 1), date(year + 1, 1, 1))
    return None


def _is_month(found: re.Match[str], question: str) -> bool:
    """ "may" and "march" are also verbs: months only with a part, a qualifier, a year, a
    capital letter or a preposition before them."""
    name = found.group(3)
    if name not in ("may", "march", "mar", "jan", "sep"):
        return name not in ("jan", "sep", "mar") or bool(found.group(4))
    if found.group(1) or found.group(2) or found.group(4):
        return True
    original = question[found.start(3) : found.end(3)]
    preceding = question[: found.start(3)].rstrip()
    sentence_start = not preceding or preceding[-1] in ".!?"
    before = preceding.lower().split()[-1:]
    return (original[:1].isupper() and not sentence_start) or before in (
        ["in"],
        ["of"],
        ["since"],
        ["until"],
    )


_PAST = re.compile(
    r"\b(before|previously|previous|formerly|former|used to|in the past|earlier|prior|"
    r"originally|at first|(my|the|our|your) old|back then|no longer|changed?)\b"
)


def asks_about_past(question: str) -> bool:
    """Whether the question asks how things were before ("Where did I live before?", "my
    old phone number", "what did I use to drive?"), so that what is no longer true (a
    superseded memory) may answer it, first."""
    return _PAST.search(question.lower().replace("use to", "used to")) is not None


def asks_about_now(question: str) -> bool:
    """Whether the question asks how things are now ("Where do I live now?"), so that the
    latest of several matching statements should come first."""
    return _NOW.search(question.lower()) is not None
