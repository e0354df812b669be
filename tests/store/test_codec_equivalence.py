"""The hand-written codec against boto3's route, on random values.

`api/store/codec.py` turns values into DynamoDB's wire format in one walk of its own. The
reference below is the route it replaced, kept as it was (boto3's TypeSerializer between a
walk that prepares values and one that writes numbers in their shortest form), with three
fixes marked `fixed:` where the old route stored what DynamoDB refuses: numbers past 78
digits were rounded, not refused; '-Infinity' and '-NaN' escaped its checks; attribute names
holding lone surrogates were let through. For every value both give the same wire value, or
both refuse it with InvalidItem. CODEC_EXAMPLES=20000 runs more examples than the default 500
(20,000 passed when the codec was written)."""

import decimal
import math
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast

import pytest
from boto3.dynamodb.types import DYNAMODB_CONTEXT, Binary, TypeSerializer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.store import codec
from api.store.codec import MAX_DEPTH, MAX_DIGITS, Wire
from api.store.table import InvalidItem, StoreError

# --- the reference: the route before the hand-written codec ----------------------------

_EXACT = decimal.Context(prec=2 * MAX_DIGITS + 2)
_EXACT.traps[decimal.Inexact] = True  # fixed: a number past 78 digits was rounded
_serializer = TypeSerializer()


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _names_valid(names: Any) -> bool:
    # fixed: a name holding a lone surrogate was let through (SQLite then failed to store it)
    return all(isinstance(n, str) and n and _encodes(n) for n in names)


def _prepare(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise InvalidItem(f"Values may nest at most {MAX_DEPTH} levels deep.")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidItem("Strings must be valid Unicode text.") from e
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Decimal) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_DIGITS
    ):
        return Decimal(value).normalize(_EXACT)
    if isinstance(value, Mapping):
        if not _names_valid(value):
            raise InvalidItem("Attribute names must be non-empty strings.")
        return {k: _prepare(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_prepare(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        if not value:
            raise InvalidItem("Sets cannot be empty; store no attribute instead.")
        return {_prepare(v, depth + 1) for v in value}
    return value


def _normalize(wire: Wire) -> Wire:
    ((kind, v),) = wire.items()
    if kind == "N":
        return {"N": _number_text(v)}
    if kind == "NS":
        return {"NS": [_number_text(n) for n in v]}
    if kind == "L":
        return {"L": [_normalize(e) for e in v]}
    if kind == "M":
        return {"M": {k: _normalize(e) for k, e in v.items()}}
    return wire


def _number_text(text: str) -> str:
    number = Decimal(text)
    if not number.is_finite():  # fixed: '-Infinity' and '-NaN' passed boto3's check
        raise ValueError(f"{text} is not a finite number")
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(DYNAMODB_CONTEXT), "f")


def reference_value(value: Any, depth: int = 0) -> Wire:
    try:
        return _normalize(cast(Wire, _serializer.serialize(_prepare(value, depth))))
    except (TypeError, ValueError, decimal.DecimalException) as e:
        raise InvalidItem(f"Value {value!r:.80} cannot be stored: {e}") from e


def reference_item(item: Mapping[str, Any]) -> dict[str, Wire]:
    if not _names_valid(item):
        raise InvalidItem("Attribute names must be non-empty strings.")
    return {name: reference_value(value, depth=1) for name, value in item.items()}


# --- random values -----------------------------------------------------------------------

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
odd_text = st.text(st.characters() | surrogates, max_size=12) | st.sampled_from(
    ["", "é", "\u0000", "\U0010ffff", "\U0001f600", "a\ud800b", "\udfff", "\ufeff", "0"]
)
valid_text = st.text(max_size=12)
huge_ints = st.builds(
    lambda m, e: m * 10**e, st.integers(-(10**45), 10**45), st.integers(0, 130)
) | st.sampled_from([10**38 - 1, 10**38, -(10**38), 10**126, 10**127, 10**200 + 1, 2**63])
ints = st.integers() | huge_ints
decimals = (
    st.decimals(allow_nan=True, allow_infinity=True)
    | st.builds(
        lambda sign, digits, exp: Decimal((sign, tuple(digits), exp)),
        st.integers(0, 1),
        st.lists(st.integers(0, 9), min_size=1, max_size=90),
        st.integers(-210, 210),
    )
    | st.sampled_from(
        [
            Decimal(t)
            for t in [
                "1.50",
                "-0",
                "0E-200",
                "1E-130",
                "1E-131",
                "9.99E+125",
                "1E+126",
                "1.8E+38",
                "1E+999999",
                "-Infinity",
                "-NaN",
                "sNaN",
                "NaN1",
            ]
        ]
    )
)
floats = st.floats() | st.sampled_from(
    [math.nan, math.inf, -math.inf, -0.0, 5e-324, 1e-130, 1e-131, 1e125, 1e126, 1e16, 2.0**53]
)
binaries = st.binary(max_size=8) | st.binary(max_size=8).map(bytearray)
set_decimals = decimals.filter(lambda d: not d.is_snan())  # a signalling NaN cannot be hashed
hashable_scalars = valid_text | odd_text | ints | set_decimals | floats | st.binary(max_size=8)
scalars = hashable_scalars | decimals | st.booleans() | st.none() | binaries
sets = (
    st.sets(odd_text, max_size=4)
    | st.sets(ints | set_decimals | floats | st.booleans(), max_size=4)
    | st.sets(st.binary(max_size=6), max_size=4)
    | st.sets(hashable_scalars | st.booleans() | st.none() | st.tuples(st.integers()), max_size=4)
).flatmap(lambda s: st.sampled_from([s, frozenset(s)]))
names = valid_text | odd_text | st.integers() | st.none() | st.just("")


def _nest(leaf: Any, levels: int) -> Any:
    for i in range(levels):
        leaf = [leaf] if i % 2 else {"k": leaf}
    return leaf


deep = st.builds(_nest, scalars | sets | st.just([]) | st.just({}), st.integers(25, 36))
values = (
    st.recursive(
        scalars | sets,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.lists(inner, max_size=4).map(tuple)
            | st.dictionaries(names, inner, max_size=4)
        ),
        max_leaves=20,
    )
    | deep
)
items = st.dictionaries(names, values, max_size=6)


def _outcome(route: Any, *args: Any) -> Any:
    try:
        return route(*args)
    except InvalidItem:
        return InvalidItem


# New random cases on every run (none is replayed from a database), so runs add up; more
# in one run with CODEC_EXAMPLES.
RANDOM = settings(
    max_examples=int(os.environ.get("CODEC_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@RANDOM
@given(values, st.integers(0, 3))
def test_a_value_is_written_as_the_boto3_route_writes_it(value: Any, depth: int) -> None:
    assert _outcome(codec.to_wire_value, value, depth) == _outcome(reference_value, value, depth)


@RANDOM
@given(items)
def test_an_item_is_written_as_the_boto3_route_writes_it(item: dict[Any, Any]) -> None:
    assert _outcome(codec.to_wire, item) == _outcome(reference_item, item)


@RANDOM
@given(items)
def test_what_is_read_back_is_written_again_unchanged(item: dict[Any, Any]) -> None:
    try:
        wire = codec.to_wire(item)
    except InvalidItem:
        return
    stored = codec.from_wire(wire)
    again = codec.to_wire(stored)
    assert {k: codec._canonical(v) for k, v in again.items()} == {
        k: codec._canonical(v) for k, v in wire.items()
    }
    # and through SQLite's JSON text too
    assert codec.from_wire(codec.loads(codec.dumps(wire))) == stored


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=1000, deadline=None)
def test_every_float_is_written_as_boto3_writes_its_decimal(value: float) -> None:
    """The shortcuts for floats (their own repr, or their integer) against the exact route."""
    assert _outcome(codec.to_wire_value, value) == _outcome(reference_value, value)


def test_bytes_come_back_as_bytes() -> None:
    item = {"b": b"\x00\xff", "a": bytearray(b"xy"), "s": {b"1", b"2"}, "w": Binary(b"z")}
    wire = codec.to_wire(item)
    assert wire == reference_item(item)
    for stored in (codec.from_wire(wire), codec.from_wire(codec.loads(codec.dumps(wire)))):
        assert stored == {"b": b"\x00\xff", "a": b"xy", "s": {b"1", b"2"}, "w": b"z"}
        assert all(type(v) is bytes for v in (stored["b"], stored["a"], stored["w"]))


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        (Decimal("-NaN"), "finite"),
        (Decimal("sNaN"), "finite"),
        (Decimal("1" * 39), "38 significant digits"),
        (10**200 + 1, "38 significant digits"),
        (Decimal("1E+127"), "9.99E+125"),
        (1e-300, "1E-130"),
        (set(), "cannot be empty"),
        (frozenset(), "cannot be empty"),
        ({1, "a"}, "only numbers, only text or only bytes"),
        ({None}, "only numbers, only text or only bytes"),
        (object(), "type object cannot be stored"),
        (1 + 2j, "type complex cannot be stored"),
        ({1: "x"}, "non-empty strings"),
        ({"": "x"}, "non-empty strings"),
        ({"a\ud800": "x"}, "lone surrogate"),
        ("a\udfff", "lone surrogate"),
        (["ok", {"s": {"x\ud800"}}], "lone surrogate"),
        (_nest("x", MAX_DEPTH + 1), f"at most {MAX_DEPTH} levels"),
    ],
)
def test_what_dynamodb_refuses_is_refused_with_a_reason(value: Any, says: str) -> None:
    with pytest.raises(InvalidItem, match=re.escape(says)):
        codec.to_wire_value(value)


def test_nesting_up_to_the_limit_is_kept() -> None:
    assert codec.to_wire_value(_nest("x", MAX_DEPTH)) == reference_value(_nest("x", MAX_DEPTH))


def test_the_codec_imports_no_boto3() -> None:
    probe = (
        "import sys\nfrom api.store import codec\n"
        "codec.from_wire(codec.to_wire({'a': 1.5, 'b': {b'x'}, 'c': [{'d': None}]}))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert ran.stdout.strip() == "[]"


def test_a_type_the_codec_does_not_know_is_a_store_error() -> None:
    """A type DynamoDB may add one day is refused by name, not guessed at."""
    with pytest.raises(StoreError, match="Unknown attribute type VECTOR"):
        codec.from_wire_value({"VECTOR": [1, 2]})
