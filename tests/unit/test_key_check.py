"""The check every extraction's tables pass before a commit: a text field that carries the
location's key, in any case or encoding, is named; nothing else is. The tables come as a
load makes them: slices of arrays shared by many partitions, nested, some values null."""

import pyarrow as pa
import pytest

from pipeline.core.untrusted import KEY_RUN, Redactor
from pipeline.extract.keys import fields_with_keys

KEY = "sk_live_5fA9qT2mZx81"
PATTERN = Redactor([KEY]).pattern
ESCAPED = "".join(f"\\u{ord(c):04x}" for c in KEY)


def _shared(values: list, kind: pa.DataType | None = None) -> pa.Array:
    """``values`` as the middle of a larger array, the key in the values around it: a
    partition's column cut from tables made for many partitions at once."""
    return pa.array([f"before {KEY}", *values, f"after {KEY}"],
                    kind or pa.string()).slice(1, len(values))


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_the_key_in_the_arrays_around_a_partitions_slice_is_not_its_own(kind):
    tables = {"receipts": pa.table({"staff_name": _shared(["Anna", None, "Ben"], kind)})}
    assert fields_with_keys(tables, PATTERN) == []


@pytest.mark.parametrize("echoed", [KEY, KEY.upper(), KEY[3:13], ESCAPED, "%73%6B" + KEY[2:]])
def test_the_key_in_any_case_or_encoding_in_a_nested_field_is_named(echoed):
    items = pa.array([[{"name": "Soup", "note": None}],
                      [{"name": "Tea", "note": f"for {echoed} table 4"}]],
                     pa.list_(pa.struct([("name", pa.string()), ("note", pa.string())])))
    tables = {"receipts": pa.table({"staff_name": _shared(["Anna", None])}),
              "receipt_items": pa.table({"items": pa.chunked_array([items[:1], items[1:]])})}
    assert fields_with_keys(tables, PATTERN) == ["receipt_items.items.note"]


def test_a_key_that_only_values_side_by_side_would_spell_is_in_no_field():
    parts = [KEY[at:at + KEY_RUN - 1] for at in range(0, len(KEY), KEY_RUN - 1)]
    tables = {"receipts": pa.table({"a": _shared(parts)}),
              "payments": pa.table({"b": _shared(parts[:1]), "c": _shared(parts[1:2])})}
    assert fields_with_keys(tables, PATTERN) == []


def test_after_a_null_and_in_the_last_value_the_key_is_found():
    tables = {"payments": pa.table({"name": _shared([None, "", f"x{KEY}"]),
                                    "empty": pa.array([None] * 3, pa.string())})}
    assert fields_with_keys(tables, PATTERN) == ["payments.name"]
