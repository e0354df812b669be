"""`plain`: JSON not stored yet comes out as the same JSON once stored and read back."""

from typing import Any

import pytest

from api.kit.json_data import plain
from api.store import codec


def _stored(value: Any) -> Any:
    return codec.from_wire_value(codec.to_wire_value(value))


@pytest.mark.parametrize(
    "value",
    [2.0, 0.1, -0.0, 1.5e-7, 1e23, 2.0**60, -(2.0**53) - 2, 1e39, 9.99e125, 12345678.9],
)
def test_a_float_comes_out_as_it_would_once_stored(value: float) -> None:
    assert plain(value) == plain(_stored(value))
    assert type(plain(value)) is type(plain(_stored(value)))


def test_a_large_whole_float_is_its_printed_integer_not_its_binary_value() -> None:
    assert plain(1e23) == 10**23
    assert plain({"a": [1e23]}) == {"a": [10**23]}


def test_non_finite_floats_are_left_as_they_are() -> None:
    assert plain(float("inf")) == float("inf")
