"""JSON text: orjson's speed, the standard library's reach."""

import json

from api.kit import json_text
from api.store import codec


def test_what_orjson_writes_reads_back_as_the_standard_library_would() -> None:
    value = {"text": "héllo \u2028 \U0001f600", "n": [1, 2.5, None, True], "nested": {"a": ""}}
    text = json_text.dumps(value)
    assert json.loads(text) == value
    assert json_text.loads(text) == value
    assert "é" in text  # not escaped


def test_what_orjson_refuses_is_written_as_before() -> None:
    # A lone surrogate (a provider's JSON may carry one) and an integer past 64 bits.
    value = {"text": "cut \ud800 here", "big": 2**70}
    text = json_text.dumps(value)
    assert json.loads(text) == value
    assert json_text.loads(text) == value


def test_stored_items_round_trip_through_the_codec() -> None:
    item = {"pk": "a", "sk": "b", "blob": b"\x00\xff", "n": 3, "s": {"x", "y"}}
    wire = codec.to_wire(item)
    assert codec.from_wire(codec.loads(codec.dumps(wire))) == codec.from_wire(wire)
