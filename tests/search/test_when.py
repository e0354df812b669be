"""The time a question names, read as people mean it, relative to when it is asked."""

from datetime import UTC, date, datetime

import pytest

from api.search import when

ASKED = datetime(2026, 3, 9, 15, 0, tzinfo=UTC)  # a Monday


def days(question: str, asked: datetime = ASKED) -> tuple[date, date] | None:
    """The span as first day and last day (the half-day margins taken off)."""
    found = when.span(question, asked.timestamp())
    if found is None:
        return None
    start, end = found
    first = datetime.fromtimestamp(start + when.HALF_DAY, UTC).date()
    last = datetime.fromtimestamp(end - when.HALF_DAY - 1, UTC).date()
    return first, last


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("What did I do yesterday morning?", date(2026, 3, 8), date(2026, 3, 8)),
        ("what did I say today", date(2026, 3, 9), date(2026, 3, 9)),
        ("What did I tell you two days ago?", date(2026, 3, 7), date(2026, 3, 7)),
        ("Who visited me three weeks ago?", date(2026, 2, 12), date(2026, 2, 19)),
        ("a couple of weeks ago", date(2026, 2, 19), date(2026, 2, 26)),
        ("What was I nervous about last month?", date(2026, 2, 1), date(2026, 2, 28)),
        ("What did I do last week?", date(2026, 3, 2), date(2026, 3, 8)),
        ("What big news did I share last August?", date(2025, 8, 1), date(2025, 8, 31)),
        ("What changed in November?", date(2025, 11, 1), date(2025, 11, 30)),
        ("What did I catch this January?", date(2026, 1, 1), date(2026, 1, 31)),
        ("What went wrong at work in May 2025?", date(2025, 5, 1), date(2025, 5, 31)),
        ("What was I planning in March last year?", date(2025, 3, 1), date(2025, 3, 31)),
        ("What was wrong in late December?", date(2025, 12, 20), date(2025, 12, 31)),
        ("good news in mid-June last year", date(2025, 6, 10), date(2025, 6, 20)),
        ("early April", date(2025, 4, 1), date(2025, 4, 10)),
        ("What concert did I have in the spring of 2025?", date(2025, 3, 1), date(2025, 5, 31)),
        ("What was I building last fall?", date(2025, 9, 1), date(2025, 11, 30)),
        ("on Tuesdays this winter", date(2025, 12, 1), date(2026, 2, 28)),
        ("How was last summer?", date(2025, 6, 1), date(2025, 8, 31)),
        ("What did I do on Tuesday?", date(2026, 3, 3), date(2026, 3, 3)),
        ("What happened last Monday?", date(2026, 3, 2), date(2026, 3, 2)),
        ("What did I cook on New Year's Eve?", date(2025, 12, 31), date(2025, 12, 31)),
        ("What did I do on Valentine\u2019s Day?", date(2026, 2, 14), date(2026, 2, 14)),
        ("What did we do at Easter last year?", date(2025, 4, 18), date(2025, 4, 21)),
        ("Christmas 2024", date(2024, 12, 24), date(2024, 12, 26)),
        ("over Thanksgiving", date(2025, 11, 26), date(2025, 11, 30)),
        ("the start of last year", date(2025, 1, 1), date(2025, 3, 31)),
        ("What did I do in 2024?", date(2024, 1, 1), date(2024, 12, 31)),
        ("What did I do two years ago?", date(2024, 1, 1), date(2024, 12, 31)),
        ("in the fall", date(2025, 9, 1), date(2025, 11, 30)),
        ("during the summer of 2024", date(2024, 6, 1), date(2024, 8, 31)),
        ("What was I doing summer 2025?", date(2025, 6, 1), date(2025, 8, 31)),
        ("I asked about it. In May what did I plan?", date(2025, 5, 1), date(2025, 5, 31)),
    ],
)
def test_spans(question: str, first: date, last: date) -> None:
    assert days(question) == (first, last)


@pytest.mark.parametrize(
    "question",
    [
        "What food do I like?",
        "What may I eat?",
        "May I ask what my dog is called?",
        "March is when what happens?",
        "Where do the troops march?",
        "my dog's name",
        "Did I fall off my bike?",
        "the hot spring we liked",
        "Who is Summer?",
        "What do I do on Mondays?",
        "What am I doing next Friday?",
        "Do I take 2000 mg of it?",
        "Is the door code 1987?",
    ],
)
def test_no_time_named(question: str) -> None:
    assert when.span(question, ASKED.timestamp()) is None


@pytest.mark.parametrize(
    "question",
    [
        "2026 years ago",
        "3000 years ago",
        "1000000 days ago",
        "100000 months ago",
        "99999999999 weeks ago",
    ],
)
def test_a_time_no_calendar_holds_names_none(question: str) -> None:
    assert when.span(question, ASKED.timestamp()) is None


def test_holidays_years_back() -> None:
    assert days("What did we do at Christmas two years ago?") == (
        date(2024, 12, 24),
        date(2024, 12, 26),
    )


def test_a_month_asked_about_in_that_month_is_this_one() -> None:
    in_march = datetime(2026, 3, 20, tzinfo=UTC)
    assert days("What did I do in March?", in_march) == (date(2026, 3, 1), date(2026, 3, 31))
    assert days("What did I do last March?", in_march) == (date(2025, 3, 1), date(2025, 3, 31))


def test_winter_in_january_began_last_december() -> None:
    january = datetime(2026, 1, 15, tzinfo=UTC)
    assert days("this winter", january) == (date(2025, 12, 1), date(2026, 2, 28))
    assert days("last winter", january) == (date(2024, 12, 1), date(2025, 2, 28))


def test_easter_dates() -> None:
    assert [when._easter(y) for y in (2024, 2025, 2026)] == [
        date(2024, 3, 31),
        date(2025, 4, 20),
        date(2026, 4, 5),
    ]


@pytest.mark.parametrize(
    ("question", "now"),
    [
        ("Where do I live now?", True),
        ("What is my current job title?", True),
        ("Am I still injured?", True),
        ("What do I eat these days?", True),
        ("Where did I live in 2024?", False),
        ("What is my dog called?", False),
    ],
)
def test_questions_about_now(question: str, now: bool) -> None:
    assert when.asks_about_now(question) is now
