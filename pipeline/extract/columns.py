"""Arrow columns out of decoded JSON, fast: the helpers of the revenue flattening.

Decimals travel as their exact JSON text and are cast to DECIMAL by Arrow, never through
float; nested records are converted by Arrow in one C++ pass.
"""

from __future__ import annotations

from decimal import Decimal
from itertools import repeat
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.extract.schemas import UTC_TS
from pipeline.pos_api.timestamps import POS_FORMAT

_NUMERIC = (int, Decimal)
_TEXTUAL = {str, int, Decimal}
_TEXT = {str, type(None)}


def text_numbers(values: list) -> pa.Array:
    """Decimal values as the exact text Arrow casts from (JSON numbers arrive as text)."""
    kinds = set(map(type, values))
    if kinds <= _TEXT:
        return pa.array(values, pa.string())
    if kinds <= _TEXTUAL:  # integers (or Decimals) among the text: str() them all in C
        return pa.array(list(map(str, values)), pa.string())
    return pa.array([v if v.__class__ is str or v is None else str(v)
                     if v.__class__ in _NUMERIC else _not_a_number(v) for v in values],
                    pa.string())


def _not_a_number(value):
    raise ValueError(f"not a decimal: {value!r}")


_PARSED_DIGITS = 38
"""Arrow parses decimal text into 128 bits: a longer text may wrap around (2**128 + 5 would
become 5) before the precision is checked, so such texts are checked exactly first."""


def decimals(texts: pa.Array, type_: pa.DecimalType) -> pa.Array:
    """Decimal text cast to ``type_``, checked: a value that does not fit raises
    ``ArrowInvalid``, never wraps."""
    longest = pc.max(pc.utf8_length(texts)).as_py()
    if longest is not None and longest > _PARSED_DIGITS:
        texts = pa.array([_fitting(t, type_) if t is not None and len(t) > _PARSED_DIGITS
                          else t for t in texts.to_pylist()], pa.string())
    return texts.cast(type_)


def _fitting(text: str, type_: pa.DecimalType) -> str:
    """A long decimal text as the short exact text of the same value, if ``type_`` holds it."""
    try:
        value = Decimal(text)
    except ArithmeticError:
        return text  # not a number: Arrow's cast says so
    unit = Decimal(1).scaleb(-type_.scale)
    if not value.is_finite() or abs(value) >= Decimal(10) ** (type_.precision - type_.scale) \
            or value != value.quantize(unit):
        raise pa.ArrowInvalid(f"{text[:40]}... does not fit")
    return format(value.quantize(unit), "f")


class BadValue(ValueError):
    """A value of row ``index`` that its column's type cannot hold."""

    def __init__(self, message: str, index: int | None):
        super().__init__(message)
        self.index = index


def _first_unrepresentable(values: list, type_: pa.DataType) -> int | None:
    """The first row whose value does not cast (asked only once a whole cast failed)."""
    for index, value in enumerate(values):
        try:
            decimals(text_numbers([value]), type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
            return index
    return None


def column(name: str, values: list, type_: pa.DataType, required: bool = False) -> pa.Array:
    """One Arrow column; decimals are cast from their text, so nothing passes through float."""
    try:
        if isinstance(values, pa.Array):
            array = values if values.type == type_ else values.cast(type_)
        elif pa.types.is_decimal(type_):
            array = decimals(text_numbers(values), type_)
        else:
            array = pa.array(values, type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, OverflowError) as exc:
        if pa.types.is_decimal(type_) and not isinstance(values, pa.Array):
            index = _first_unrepresentable(values, type_)
            if index is not None:
                raise BadValue(f"field {name}: {_decimal_problem(values[index], type_)}",
                               index) from None
        raise ValueError(f"field {name}: {exc}") from None
    if required and array.null_count:
        raise ValueError(f"field {name} is null")
    return array


def _decimal_problem(value, type_: pa.DecimalType) -> str:
    """Why ``value`` is no DECIMAL of ``type_``: not a number at all, or too large or too
    precise for it."""
    try:
        number = Decimal(value) if isinstance(value, str | int | Decimal) \
            and not isinstance(value, bool) else None
    except ArithmeticError:
        number = None
    if number is None or not number.is_finite() or (
            isinstance(value, str) and value != value.strip()):
        shown = repr(value) if isinstance(value, str) else _shown(value)
        return f"{shown} is not a decimal number (a JSON number, or its plain text)"
    return f"{_shown(value)} cannot be stored as DECIMAL({type_.precision},{type_.scale})"


def _failing_field(value, type_: pa.DataType,
                   prefix: str = "") -> tuple[str, object, pa.DataType] | None:
    """The first field of ``value`` that Arrow cannot convert to ``type_``: its wire path,
    its value and the type it should have (None when the whole value converts)."""
    try:
        pa.array([value], type_)
        return None
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pass
    if pa.types.is_struct(type_) and isinstance(value, dict):
        for child in type_:
            found = _failing_field(value.get(child.name), child.type,
                                   f"{prefix}{child.name}.")
            if found:
                return found
    return prefix.rstrip(".") or "(the record)", value, type_


def _kind(type_: pa.DataType) -> str:
    if pa.types.is_integer(type_):
        return "integer"
    if pa.types.is_struct(type_):
        return "object"
    if pa.types.is_string(type_):
        return "string"
    if pa.types.is_boolean(type_):
        return "boolean"
    return str(type_)


def _shown(value) -> str:
    """A value for a message: a very long number is cut, its length said."""
    text = str(value)
    return text if len(text) <= 60 else f"{text[:30]}... ({len(text)} characters)"


def get(rows: list[dict], key: str) -> list:
    """``row.get(key)`` of every row (``map`` keeps the loop in C)."""
    return list(map(dict.get, rows, repeat(key)))


def require(rows: list[dict], key: str) -> list:
    """``row[key]`` of every row; a missing key raises ``KeyError``."""
    return list(map(dict.__getitem__, rows, repeat(key)))


def sub(objects: list, key: str) -> list:
    """``obj.get(key)`` of every nested object, None where the object is null."""
    if None in objects:
        return [o.get(key) if o else None for o in objects]
    return list(map(dict.get, objects, repeat(key)))


def at_path(rows: list[dict], path: str, required: bool = False) -> list:
    """The value at a dotted wire path (``tax.value``) of every row; None where it is absent.

    A required top-level key that is missing raises ``KeyError`` (the caller names it).
    """
    head, *rest = path.split(".")
    values = require(rows, head) if required and not rest else get(rows, head)
    for key in rest:
        values = sub(values, key)
    return values


def wire_struct(paths: dict[str, tuple[str, pa.DataType]]) -> pa.StructType:
    """The nested struct type that holds every ``column: (wire path, type)`` of a table."""
    tree: dict = {}
    for path, type_ in paths.values():
        *parents, leaf = path.split(".")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = type_

    def build(node: dict) -> pa.StructType:
        return pa.struct([(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return build(tree)


def table(schema: pa.Schema, columns: dict[str, list]) -> pa.Table:
    arrays = [column(f.name, columns[f.name], f.type, required=not f.nullable) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def wall_clock(stamps: list[str]) -> pa.Array:
    """Local wall-clock timestamps from ``dd.MM.yyyy HH:mm:ss`` strings."""
    return pc.strptime(pa.array(stamps, pa.string()), format=POS_FORMAT, unit="s",
                       error_is_null=False)


def utc(local: pa.Array, tz: ZoneInfo) -> pa.Array:
    """The UTC instants of wall-clock times at the location.

    In the autumn hour that occurs twice the first occurrence is taken; a time inside
    the spring gap (no clock shows it) is read as the last instant before the gap.
    """
    utc = pc.assume_timezone(local, tz.key, ambiguous="earliest", nonexistent="earliest")
    return utc.cast(UTC_TS)


def struct_columns(rows: list[dict], struct: pa.StructType, fields: dict[str, str],
                    what: str) -> dict[str, pa.Array]:
    """Columns taken out of the wire objects by Arrow, one C++ pass for all of them."""
    try:
        array = pa.array(rows, struct)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        for index, row in enumerate(rows):  # which row and field, asked only on failure
            if found := _failing_field(row, struct):
                path, value, type_ = found
                raise BadValue(f"field {path}: {_shown(value)} is not a valid {_kind(type_)}",
                               index) from None
        raise ValueError(f"{what}: {exc}") from None
    children: dict[str, pa.Array] = {}

    def walk(prefix: str, parent: pa.StructArray) -> None:
        # flatten() merges the parent's nulls into each child, at every level
        for child_type, child in zip(parent.type, parent.flatten(), strict=True):
            name = prefix + child_type.name
            if pa.types.is_struct(child_type.type):
                walk(name + ".", child)
            else:
                children[name] = child

    walk("", array)
    return {col: children[path] for col, path in fields.items()}
