"""Items to and from DynamoDB's typed wire format, shared by both adapters.

Both engines store the same typed values (SQLite keeps the wire format as JSON), so a
value round-trips identically everywhere: floats become Decimal, integral numbers come
back as int, bytes stay bytes, and DynamoDB's 38-digit number limits apply on both.
"""

import base64
import decimal
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

from api.store.table import MAX_ITEM_BYTES, InvalidItem, Item, ItemTooLarge

Wire = dict[str, Any]  # one attribute value: {"S": "..."}, {"N": "12"}, {"M": {...}}, ...

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _prepare(value: Any) -> Any:
    """Floats to Decimal (boto3 refuses floats); containers walked."""
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, Mapping):
        return {k: _prepare(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_prepare(v) for v in value]
    if isinstance(value, set | frozenset):
        return {_prepare(v) for v in value}
    return value


def to_wire_value(value: Any) -> Wire:
    try:
        return cast(Wire, _serializer.serialize(_prepare(value)))
    except (TypeError, ValueError, decimal.Inexact, decimal.Rounded) as e:
        raise InvalidItem(f"Value {value!r:.80} cannot be stored: {e}") from e


def to_wire(item: Mapping[str, Any]) -> dict[str, Wire]:
    return {name: to_wire_value(value) for name, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value
    if isinstance(value, Binary):
        return value.__bytes__()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return {_plain(v) for v in value}
    return value


def from_wire_value(value: Any) -> Any:
    return _plain(_deserializer.deserialize(value))


def from_wire(item: Mapping[str, Any]) -> Item:
    return {name: from_wire_value(value) for name, value in item.items()}


# --- size, as DynamoDB counts it -------------------------------------------------------


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").split("e")[0].split("E")[0].strip("0")
    return (len(digits) + 1) // 2 + 1


def _value_size(value: Wire) -> int:
    ((kind, v),) = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "N":
        return _number_size(v)
    if kind == "B":
        return len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in v)
    if kind == "NS":
        return sum(_number_size(n) for n in v)
    if kind == "BS":
        return sum(len(b) for b in v)
    if kind == "L":
        return 3 + sum(1 + _value_size(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + _value_size(e) for k, e in v.items())
    raise InvalidItem(f"Unknown attribute type {kind}")


def item_size(item: Mapping[str, Wire]) -> int:
    return sum(len(name.encode("utf-8")) + _value_size(v) for name, v in item.items())


def check_size(item: Mapping[str, Wire]) -> None:
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise ItemTooLarge(
            f"The item is {size} bytes; an item may hold at most {MAX_ITEM_BYTES} bytes."
        )


# --- JSON text of the wire format, for engines that store text --------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, Binary):
        value = value.__bytes__()
    if isinstance(value, bytes | bytearray):
        return {"$b": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _json_hook(obj: dict[str, Any]) -> Any:
    if obj.keys() == {"$b"}:
        return base64.b64decode(obj["$b"])
    return obj


def dumps(item: Mapping[str, Wire]) -> str:
    return json.dumps(item, default=_json_default, ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> dict[str, Wire]:
    return cast(dict[str, Wire], json.loads(text, object_hook=_json_hook))
