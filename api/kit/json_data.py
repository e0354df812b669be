"""Free JSON that clients attach to what they store (an agent's or a message's `metadata`).

A request's JSON is checked so that every engine keeps it as sent (DynamoDB refuses empty
attribute names, text that is not valid Unicode, numbers past 38 digits or 1E+126, and
nesting deeper than 32), and bounded in size. Read back from the store, numbers are
`Decimal`s: `StoredJson` turns them into plain JSON numbers again."""

import json
import math
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, GetJsonSchemaHandler, JsonValue
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from api.kit.numbers import float_decimal
from api.kit.text import MetadataKey, name_pattern

MAX_JSON_BYTES = 32_768  # encoded; an item holds 400 KB, and a message is stored twice
MAX_JSON_DEPTH = 16
MAX_DIGITS = 38  # DynamoDB's significant digits
LARGEST = 9.99e125  # DynamoDB's largest magnitude
SMALLEST = 1e-130  # and its smallest, above zero


def _check(value: Any, depth: int, where: str) -> None:
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"nests deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, str):
        _text(value, where)
    elif isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int):
        if abs(value) >= 10**MAX_DIGITS:
            raise ValueError(f"{where}: integers have at most {MAX_DIGITS} digits")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: numbers must be finite")
        if value != 0 and not SMALLEST <= abs(value) <= LARGEST:
            raise ValueError(f"{where}: numbers must lie between 1e-130 and 9.99e125 in size")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check(item, depth + 1, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not key:
                raise ValueError(f"{where}: keys may not be empty")
            _text(key, where)
            _check(item, depth + 1, f"{where}.{key}")


def _text(value: str, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where}: text must be valid Unicode") from None


def check_storable(value: Any, where: str) -> None:
    """ValueError saying why a store would not keep `value` as sent; no bound on its size
    (for JSON whose size is bounded otherwise, as an imported tool call's by its line)."""
    _check(value, 1, where)


def storable(value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """`value`, or ValueError saying why a store would not keep it as sent."""
    _check(value, 1, "metadata")
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > MAX_JSON_BYTES:
        raise ValueError(f"takes {size} bytes as JSON; at most {MAX_JSON_BYTES}")
    return value


def _none_is_empty(value: Any) -> Any:
    return {} if value is None else value


def plain(value: Any) -> Any:
    """Stored JSON as JSON again: a number read from the store (a Decimal) becomes an int
    when it is whole and within the integers a request may send, a float otherwise (1e39,
    sent as a float, is stored whole: as an int it would be refused when sent again, as an
    export is on import). A float not stored yet comes out as it would once stored (2.0
    is stored as 2, 1e23 as the integer 10**23: the float as it prints, not its binary
    value)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return value
        value = float_decimal(value)
    if isinstance(value, Decimal | int) and not isinstance(value, bool):
        whole = value == int(value) and abs(value) < 10**MAX_DIGITS
        return int(value) if whole else float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class NamedKeys:
    """Documents the rule of MetadataKey for an object's keys (as `propertyNames`)."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        found = handler(schema)
        found["propertyNames"] = {"pattern": name_pattern()}
        return found


class _OrNull:
    """Documents null beside the schema of a value whose validator takes null."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"anyOf": [handler(schema), {"type": "null"}]}


# What request models declare: a JSON object (null or absent: empty) a store keeps as sent.
Metadata = Annotated[
    dict[MetadataKey, JsonValue],
    BeforeValidator(_none_is_empty),
    AfterValidator(storable),
    NamedKeys,
    _OrNull,
]
# What stored models declare: a JSON object as the store gives it back.
StoredJson = Annotated[dict[str, JsonValue], BeforeValidator(plain)]
