"""Items to and from DynamoDB's typed wire format, shared by both adapters.

Both engines store the same typed values (SQLite keeps the wire format as JSON), so a
value round-trips identically everywhere: floats become Decimal, integral numbers come
back as int, bytes stay bytes, and DynamoDB's 38-digit number limits apply on both.
"""

import base64
import decimal
import sys
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from decimal import Decimal
from typing import Any, cast

from api.kit import json_text
from api.kit.numbers import float_decimal
from api.store.table import MAX_ITEM_BYTES, InvalidItem, Item, ItemTooLarge, StoreError

Wire = dict[str, Any]  # one attribute value: {"S": "..."}, {"N": "12"}, {"M": {...}}, ...

MAX_DEPTH = 32  # DynamoDB refuses documents nested deeper
MAX_DIGITS = 38  # DynamoDB's significant digits
_EXACT = decimal.Context(prec=2 * MAX_DIGITS + 2)
# Trailing zeros are not significant digits (1.8E+38 fits in 38): numbers are reduced first,
# exactly; a number with more digits than this holds is refused, never rounded.
_REDUCE = decimal.Context(
    prec=2 * MAX_DIGITS + 2,
    traps=[decimal.InvalidOperation, decimal.Overflow, decimal.Inexact],
)
# DynamoDB's own limits, as boto3 states them (boto3.dynamodb.types.DYNAMODB_CONTEXT).
_DYNAMODB = decimal.Context(
    Emin=-128,
    Emax=126,
    prec=MAX_DIGITS,
    traps=[decimal.Clamped, decimal.Overflow, decimal.Inexact, decimal.Rounded, decimal.Underflow],
)
_BIG = 10**MAX_DIGITS
_EXACT_FLOATS = 2**53  # integral floats below this print as their exact integer


# --- Python values to the wire format ---------------------------------------------------
#
# By hand rather than through boto3's TypeSerializer: importing boto3 (and botocore) cost
# local mode 0.1-0.3 s of its start for this alone, and the generic route walked each value
# three times (floats to Decimal, serialize, numbers to their shortest text) on the path of
# every write. This is one walk, with the same results (tests/store/test_codec_equivalence.py
# holds it to the boto3 route on random values), except where that route stored what
# DynamoDB refuses: numbers past 78 digits (rounded), -Infinity and -NaN, names holding a
# lone surrogate.


def _text(value: str) -> str:
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidItem(
                f"Strings must be valid Unicode text; {value!r:.60} holds a lone surrogate."
            ) from e
    return value


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidItem(f"Attribute names must be non-empty strings, not {name!r:.60}.")
    return _text(name)


def _too_deep() -> InvalidItem:
    return InvalidItem(f"Values may nest at most {MAX_DEPTH} levels deep.")


def _dynamo_number(number: Decimal, shown: Any) -> str:
    """The shortest text of `number` as DynamoDB answers it (1.50 -> 1.5, 1E+2 -> 100)."""
    if not number.is_finite():
        raise InvalidItem(f"Numbers must be finite; {shown!r:.60} cannot be stored.")
    try:
        number = _DYNAMODB.create_decimal(number)
        if number == number.to_integral_value():
            return str(int(number))
        return format(number.normalize(_DYNAMODB), "f")
    except decimal.DecimalException as e:
        raise InvalidItem(_number_refused(shown)) from e


def _number_refused(shown: Any) -> str:
    return (
        f"The number {shown!r:.60} cannot be stored: numbers hold at most {MAX_DIGITS}"
        " significant digits and lie between 1E-130 and 9.99E+125 in size."
    )


def _reduced(value: Decimal | int) -> Decimal:
    number = Decimal(value)
    if not number.is_finite():
        raise InvalidItem(f"Numbers must be finite; {value!r:.60} cannot be stored.")
    try:
        return number.normalize(_REDUCE)
    except decimal.DecimalException as e:
        raise InvalidItem(_number_refused(value)) from e


def _float_number(value: float) -> str:
    # Shortcuts where the float's own repr (or integer) is already the answer; the rest
    # (tiny, huge, NaN, infinite) takes the exact route and its checks.
    if value.is_integer():
        if -_EXACT_FLOATS < value < _EXACT_FLOATS:
            return str(int(value))
    elif 1e-4 <= abs(value) < 1e16:
        return repr(value)
    return _dynamo_number(_float_decimal(value), value)


def _float_decimal(value: float) -> Decimal:
    try:
        return float_decimal(value)
    except ValueError as e:  # a float subclass that prints otherwise
        raise InvalidItem(str(e)) from e


def _int_number(value: int) -> str:
    if -_BIG < value < _BIG:
        return str(int(value))  # int(): an int subclass (an IntEnum) as its plain number
    return _dynamo_number(_reduced(value), value)


def _is_boto3_binary(value: Any) -> bool:
    """boto3's Binary wrapper, should a caller hand one in: bytes like any other. Only
    looked for when boto3 is loaded anyway."""
    types = sys.modules.get("boto3.dynamodb.types")
    return types is not None and isinstance(value, types.Binary)


def _list(value: list[Any] | tuple[Any, ...], depth: int) -> list[Wire]:
    if depth >= MAX_DEPTH and value:
        raise _too_deep()
    return [_wire(v, depth + 1) for v in value]


def _wire(value: Any, depth: int) -> Wire:
    kind = type(value)
    if kind is str:
        return {"S": value if value.isascii() else _text(value)}
    if kind is dict:
        return {"M": _map(value, depth)}
    if kind is int:
        return {"N": _int_number(value)}
    if kind is bool:
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if kind is list or kind is tuple:
        return {"L": _list(value, depth)}
    if kind is float:
        return {"N": _float_number(value)}
    if kind is bytes:
        return {"B": value}
    if kind is Decimal:
        return {"N": _dynamo_number(_reduced(value), value)}
    return _other(value, depth)


def _other(value: Any, depth: int) -> Wire:
    """Subclasses of the common types, sets, other mappings: in boto3's order of tests."""
    if isinstance(value, str):
        return {"S": _text(value)}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, float):  # a subclass: as it prints, the exact route
        return {"N": _dynamo_number(_float_decimal(value), value)}
    if isinstance(value, int):
        return {"N": _int_number(value)}
    if isinstance(value, Decimal):
        return {"N": _dynamo_number(_reduced(value), value)}
    if isinstance(value, bytes | bytearray):
        return {"B": value}
    if isinstance(value, AbstractSet):
        return _set(value, depth)
    if isinstance(value, Mapping):
        return {"M": _map(value, depth)}
    if isinstance(value, list | tuple):
        return {"L": _list(value, depth)}
    if _is_boto3_binary(value):
        return {"B": value.value}
    raise InvalidItem(
        f"Values of type {type(value).__name__} cannot be stored: use text, numbers, bytes,"
        " booleans, None, lists, maps, or sets of text, numbers or bytes."
    )


def _map(value: Mapping[Any, Any], depth: int) -> dict[str, Wire]:
    if depth >= MAX_DEPTH and value:
        raise _too_deep()
    depth += 1
    return {_name(name): _wire(v, depth) for name, v in value.items()}


def _set_member(value: Any) -> Any:
    """A member as the number, text or bytes it is stored as (floats as Decimal, numbers
    reduced), so that members equal once stored are one member, as in DynamoDB."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float):
        return _float_decimal(value)
    if isinstance(value, Decimal) or (
        isinstance(value, int) and not isinstance(value, bool) and not -_BIG < value < _BIG
    ):
        return _reduced(value)
    return value


def _set_number(value: int | Decimal) -> str:
    if isinstance(value, int):  # True and False too: boto3 stores them as 1 and 0
        return str(int(value))
    return _dynamo_number(value, value)


def _set(value: AbstractSet[Any], depth: int) -> Wire:
    if not value:
        raise InvalidItem("Sets cannot be empty; store no attribute instead.")
    if depth >= MAX_DEPTH:
        raise _too_deep()
    members = {_set_member(v) for v in value}
    if all(isinstance(v, int | Decimal) for v in members):
        return {"NS": [_set_number(v) for v in members]}
    if all(isinstance(v, str) for v in members):
        return {"SS": list(members)}
    if all(isinstance(v, bytes) or _is_boto3_binary(v) for v in members):
        return {"BS": [v if isinstance(v, bytes) else v.value for v in members]}
    kinds = sorted({type(v).__name__ for v in members})
    raise InvalidItem(
        "A set holds only numbers, only text or only bytes; this one holds "
        f"{', '.join(kinds)}. Use a list for anything else."
    )


def to_wire_value(value: Any, depth: int = 0) -> Wire:
    """`value` in DynamoDB's typed wire format, or InvalidItem saying why it cannot be
    stored. `depth`: how deep `value` sits in its item (an attribute's value is at 1)."""
    if depth > MAX_DEPTH:
        raise _too_deep()
    return _wire(value, depth)


def to_wire(item: Mapping[str, Any]) -> dict[str, Wire]:
    return {_name(name): to_wire_value(value, 1) for name, value in item.items()}


# --- the wire format to Python values -------------------------------------------------


def _number(text: str) -> int | Decimal:
    """Exactly as stored (DynamoDB keeps numbers, 1.8E+38, that its own 38-digit context
    would refuse to re-create), integral values as int."""
    try:
        return int(text)
    except ValueError:
        number = Decimal(text)
        return int(number) if number == number.to_integral_value() else number


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):  # DynamoDB's JSON API: base64
        return base64.b64decode(value)
    if isinstance(value, dict):  # SQLite's JSON text: {"$b": base64}
        return base64.b64decode(value["$b"])
    return bytes(value)


def from_wire_value(value: Any) -> Any:
    """What boto3's deserializer makes of a value (integral numbers as int, bytes as bytes),
    by hand: a turn reads hundreds of attributes, and the generic route costs several times
    more."""
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
    raise StoreError(f"Unknown attribute type {kind}")


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
    if isinstance(value, bytes | bytearray):
        return {"$b": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def dumps(item: Mapping[str, Wire]) -> str:
    return json_text.dumps(item, default=_json_default)


def dumps_checked(item: Mapping[str, Wire]) -> str:
    """`dumps(item)`, or ItemTooLarge. The text bounds the size: each string, name and byte
    string takes at least as many bytes of the UTF-8 text as DynamoDB counts for it (bytes
    as longer base64), each number and nesting more, and a character is at most 4 bytes.
    So only a text past a quarter of the limit needs the exact count."""
    text = json_text.dumps(item, default=_json_default)
    if 4 * len(text) > MAX_ITEM_BYTES:
        check_size(item)
    return text


def loads(text: str) -> dict[str, Wire]:
    """Binary values stay `{"$b": base64}` here; `from_wire` decodes them."""
    return cast(dict[str, Wire], json_text.loads(text))
