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

from boto3.dynamodb.types import DYNAMODB_CONTEXT, Binary, TypeDeserializer, TypeSerializer

from api.store.table import MAX_ITEM_BYTES, InvalidItem, Item, ItemTooLarge

Wire = dict[str, Any]  # one attribute value: {"S": "..."}, {"N": "12"}, {"M": {...}}, ...

MAX_DEPTH = 32  # DynamoDB refuses documents nested deeper
MAX_DIGITS = 38  # DynamoDB's significant digits
_EXACT = decimal.Context(prec=2 * MAX_DIGITS + 2)


class _Deserializer(TypeDeserializer):
    """Numbers read exactly: DynamoDB can store values (1.8E+38) that its own 38-digit
    context would refuse to re-create."""

    def _deserialize_n(self, value: str) -> Decimal:
        return Decimal(value)

    def _deserialize_ns(self, value: list[str]) -> set[Decimal]:
        return {Decimal(v) for v in value}


_serializer = TypeSerializer()
_deserializer = _Deserializer()


def _prepare(value: Any, depth: int = 0) -> Any:
    """Floats to Decimal (boto3 refuses floats); the rules DynamoDB enforces on its side."""
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
    # Trailing zeros are not significant digits (1.8E+38 fits in 38), though boto3 counts them.
    if isinstance(value, Decimal) or (
        isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_DIGITS
    ):
        return Decimal(value).normalize(_EXACT)
    if isinstance(value, Mapping):
        for name in value:
            if not isinstance(name, str) or not name:
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
    """Numbers in their shortest form, as DynamoDB answers them (1.50 -> 1.5)."""
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
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(DYNAMODB_CONTEXT), "f")


def to_wire_value(value: Any, depth: int = 0) -> Wire:
    try:
        return _normalize(cast(Wire, _serializer.serialize(_prepare(value, depth))))
    except (TypeError, ValueError, decimal.DecimalException) as e:
        raise InvalidItem(f"Value {value!r:.80} cannot be stored: {e}") from e


def to_wire(item: Mapping[str, Any]) -> dict[str, Wire]:
    if not all(isinstance(name, str) and name for name in item):
        raise InvalidItem("Attribute names must be non-empty strings.")
    return {name: to_wire_value(value, depth=1) for name, value in item.items()}


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


def _number(text: str) -> int | Decimal:
    """Exactly as stored (see _Deserializer), integral values as int."""
    try:
        return int(text)
    except ValueError:
        number = Decimal(text)
        return int(number) if number == number.to_integral_value() else number


def _bytes(value: Any) -> bytes:
    if isinstance(value, dict):  # SQLite's JSON text: {"$b": base64}
        return base64.b64decode(value["$b"])
    return bytes(value)


def from_wire_value(value: Any) -> Any:
    """What boto3's deserializer and `_plain` make of a value, by hand: a turn reads
    hundreds of attributes, and the generic route costs several times more."""
    ((kind, v),) = value.items()
    if kind == "S" or kind == "BOOL":
        return v
    if kind == "N":
        return _number(v)
    if kind == "M":
        return {name: from_wire_value(x) for name, x in v.items()}
    if kind == "L":
        return [from_wire_value(x) for x in v]
    if kind == "NULL":
        return None
    if kind == "SS":
        return set(v)
    if kind == "NS":
        return {_number(x) for x in v}
    if kind == "B":
        return _bytes(v)
    if kind == "BS":
        return {_bytes(x) for x in v}
    return _plain(_deserializer.deserialize(value))  # a type DynamoDB may add one day


def from_wire(item: Mapping[str, Any]) -> Item:
    return {name: from_wire_value(value) for name, value in item.items()}


def same_value(a: Any, b: Any) -> bool:
    """Equality as DynamoDB's `=` sees it: same type and value (True is not 1)."""
    return bool(_canonical(to_wire_value(a)) == _canonical(to_wire_value(b)))


def _canonical(wire: Wire) -> Any:
    ((kind, v),) = wire.items()
    if kind in ("SS", "NS", "BS"):
        return kind, sorted(v)
    if kind == "L":
        return kind, [_canonical(e) for e in v]
    if kind == "M":
        return kind, {k: _canonical(e) for k, e in v.items()}
    return kind, v


def add_numbers(a: int | Decimal, b: int | Decimal) -> int | Decimal:
    """ADD as DynamoDB does it: exact, then held to its 38 significant digits."""
    total = _EXACT.add(Decimal(a), Decimal(b)).normalize(_EXACT)
    if len(total.as_tuple().digits) > MAX_DIGITS:
        raise InvalidItem(f"The sum of {a} and {b} needs more than {MAX_DIGITS} digits.")
    return int(total) if total == total.to_integral_value() else total


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


def dumps(item: Mapping[str, Wire]) -> str:
    return json.dumps(item, default=_json_default, ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> dict[str, Wire]:
    """Binary values stay `{"$b": base64}` here; `from_wire` decodes them."""
    return cast(dict[str, Wire], json.loads(text))
