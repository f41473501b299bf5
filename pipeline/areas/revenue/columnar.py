"""The revenue report's pages read column-wise: the fast path of the flattening.

Arrow's C++ JSON reader parses a partition's receipts straight into the typed columns
of the spec (decimals exact, from their JSON text; every field typed as the lake stores
it), and the selection of the day, the repeats, the item lines, side dishes and payments
are Arrow compute over whole columns, not Python over each receipt.

This path only takes answers it can read exactly as the receipt-by-receipt path would
(``by_receipt.select_and_dedupe``); anything else raises ``NotPlain`` and the partition is
flattened receipt by receipt, which names what is wrong or handles what this path leaves
to it: a field the spec does not name (kept as ``extra_fields``), a key twice in one
object, a value of another JSON type, a stamp in another form (ISO 8601), a repeat that
differs from its first version, a line or payment twice in one receipt, another
location's receipt, a neighbour outside the window, a missing required field. A test
holds both paths to the same tables on every server profile and on each field of a
receipt given each awkward value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from pipeline.areas.revenue.contract import KNOWN_FIELDS, Rejected, check_neighbour
from pipeline.areas.revenue.tables import ITEM_SIDE_DISHES, PAYMENTS, RECEIPT_ITEMS, RECEIPTS
from pipeline.extract import columns, schemas

_POS_STAMP = r"^\d\d\.\d\d\.\d{4} \d\d:\d\d:\d\d$"


class NotPlain(Exception):
    """The answer needs the receipt-by-receipt path (see the module's docstring)."""


def _read_struct(table_schema: pa.Schema, nested: dict[str, pa.DataType]) -> pa.StructType:
    """The wire object of a table's rows as Arrow reads it: every wired field at its path
    (timestamps as their text), plus ``nested`` lists."""
    tree: dict = {}
    for f in table_schema:
        path = schemas.wire_path(f)
        if not path:
            continue
        *parents, leaf = path.split(".")
        node = tree
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = pa.string() if pa.types.is_timestamp(f.type) else f.type
    tree.update(nested)

    def build(node: dict) -> pa.StructType:
        return pa.struct([(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return build(tree)


_ITEM_FIELDS = _read_struct(RECEIPT_ITEMS, {})
for _kept in _read_struct(ITEM_SIDE_DISHES, {}):  # a side dish has the Item shape
    assert _ITEM_FIELDS.field(_kept.name).type == _kept.type, _kept.name
_SIDE_DISH = pa.struct([*_ITEM_FIELDS, pa.field("sideDishes", pa.list_(pa.struct([])))])
"""A side dish as Arrow reads it: the Item shape (spec 2.1), the fields the lake does not
keep of it (bookDate, tax, ...) typed as an item's; its own side dishes only when empty."""
_ITEM = pa.struct([*_ITEM_FIELDS, pa.field("sideDishes", pa.list_(_SIDE_DISH))])
_PAYMENT = _read_struct(PAYMENTS, {})
_RECEIPT = _read_struct(RECEIPTS, {"items": pa.list_(_ITEM),
                                           "payments": pa.list_(_PAYMENT)})
READ_SCHEMA = pa.schema(list(_RECEIPT))
"""A receipt as Arrow reads it: the spec's fields of each object, typed as the lake keeps
them; any other field goes receipt by receipt (``extra_fields``)."""
for _struct, _table in ((_RECEIPT, "receipts"), (_ITEM, "receipt_items"),
                        (_SIDE_DISH, "item_side_dishes"), (_PAYMENT, "payments")):
    assert {f.name for f in _struct} == KNOWN_FIELDS[_table], _table
_PARSE = pa_json.ParseOptions(explicit_schema=READ_SCHEMA, unexpected_field_behavior="error")


@dataclass
class Flattened:
    """What the column-wise path made of a partition's pages: its four tables (in served
    order, as the receipt-by-receipt path makes them) and the counts it reports."""

    tables: dict[str, pa.Table]
    receipts_seen: int = 0
    outside_day: int = 0
    dropped: Counter = field(default_factory=Counter)
    """Repeats dropped, per table (``receipts``: a receipt served twice, the same)."""
    unknown_types: Counter = field(default_factory=Counter)


@dataclass
class Selected:
    """A partition's receipts of its day, read column-wise and checked (``select_pages``),
    before its tables are made (``flatten_many``, for many partitions at once)."""

    receipts: pa.StructArray
    """The day's receipts, the first of each repeat, in served order."""
    location_id: int
    business_date: date
    tz: ZoneInfo
    receipts_seen: int = 0
    outside_day: int = 0
    dropped_receipts: int = 0
    unknown_types: Counter = field(default_factory=Counter)


def _read(bodies: list[list[msgspec.Raw]]) -> tuple[pa.StructArray, list[msgspec.Raw]]:
    """The receipts of all pages as one Arrow struct array, and each receipt's bytes."""
    raws = [raw for page in bodies for raw in page]
    if not raws:
        raise NotPlain("no receipts")
    data = b"\n".join(raws)
    try:  # one block: a receipt written over several lines is read whole
        table = pa_json.read_json(
            pa.BufferReader(data),
            pa_json.ReadOptions(use_threads=False, block_size=len(data) + 1), _PARSE)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise NotPlain(str(exc)) from None
    if table.num_rows != len(raws):
        raise NotPlain("a receipt that is no object")
    return table.to_struct_array().combine_chunks(), raws


def _selected(stamps: pa.Array, business_date: date, day_starts: time) -> pa.Array:
    """Which stamps (``dd.MM.yyyy HH:mm:ss``, local) fall into the business day."""
    day = business_date.strftime("%d.%m.%Y")
    if day_starts == time(0):
        return pc.starts_with(stamps, day)
    cut = day_starts.strftime("%H:%M:%S")
    clock = pc.utf8_slice_codeunits(stamps, 11)
    later = pc.greater_equal(clock, pa.scalar(cut))
    next_day = (business_date + timedelta(days=1)).strftime("%d.%m.%Y")
    return pc.or_(pc.and_(later, pc.starts_with(stamps, day)),
                  pc.and_(pc.invert(later), pc.starts_with(stamps, next_day)))


def _no_nulls(*arrays: pa.Array) -> None:
    if any(a.null_count for a in arrays):
        raise NotPlain("a null where a value is needed")


def _unique_or_id(objects: pa.StructArray) -> pa.Array:
    """``uniqueId`` where it is given (not empty), else ``id``: a line's dedupe key (of
    objects none of which is null)."""
    unique = objects.field("uniqueId")
    given = pc.fill_null(pc.not_equal(unique, ""), False)
    return pc.if_else(given, unique, objects.field("id"))


def _id(objects: pa.StructArray) -> pa.Array:
    return objects.field("id")


def _children(lists: pa.Array, key_of) -> tuple[dict[str, pa.Array], np.ndarray, np.ndarray,
                                                 pa.Array, np.ndarray]:
    """The elements of each row's list, the first of each key (``key_of``) within its list:
    those elements' fields, each one's parent row, its position among them (from 1) and
    its key; and the parent rows of the repeats dropped."""
    values = pc.list_flatten(lists)
    _no_nulls(values)
    parents = pc.list_parent_indices(lists).to_numpy()
    keys = key_of(values)  # (no element is null: its fields are its own)
    _no_nulls(keys)
    # a (parent, key) pair as one integer: the key's code among the distinct keys
    codes = pc.dictionary_encode(keys).indices.to_numpy().astype(np.int64)
    pairs = parents.astype(np.int64) * (int(codes.max(initial=0)) + 1) + codes
    _, first = np.unique(pairs, return_index=True)
    dropped = parents[:0]
    if len(first) < len(keys):  # the first of each pair, in served order
        at = np.sort(first)
        repeats = np.ones(len(keys), bool)
        repeats[at] = False
        dropped = parents[repeats]
        values, parents, keys = values.take(at), parents[at], keys.take(at)
    fields = _fields(values)
    # parents ascend: a line's position is its index less its list's first index
    position = np.arange(len(parents)) - np.searchsorted(parents, parents) + 1
    return fields, parents, position, keys, dropped


def _fields(objects: pa.StructArray) -> dict[str, pa.Array]:
    """Every field of ``objects`` by its wire path (``tax.value``), nested objects' too; a
    null object's fields are null (``flatten`` merges the parent's nulls, level by level)."""
    out: dict[str, pa.Array] = {}

    def walk(prefix: str, parent: pa.StructArray) -> None:
        for child_type, child in zip(parent.type, parent.flatten(), strict=True):
            out[prefix + child_type.name] = child
            if pa.types.is_struct(child_type.type):
                walk(f"{prefix}{child_type.name}.", child)

    walk("", objects)
    return out


def _columns(fields: dict[str, pa.Array], schema: pa.Schema) -> dict[str, pa.Array]:
    """Every wired column of ``schema`` (but timestamps, read from their text) out of the
    objects' ``fields``."""
    return {f.name: fields[path] for f in schema
            if (path := schemas.wire_path(f)) and not pa.types.is_timestamp(f.type)}


def select_pages(bodies: list[list[msgspec.Raw]], *, location_id: int, own: set[str],
                 known_types: frozenset[str], business_date: date, tz: ZoneInfo,
                 day_starts: time, window: tuple[datetime, datetime] | None) -> Selected:
    """A partition's receipts of its day out of its pages' receipts (``bodies``: each
    page's receipts as raw JSON), checked and counted, or ``NotPlain``: what
    ``flatten_many`` makes the tables of."""
    table, raws = _read(bodies)
    _no_nulls(table)  # (a receipt is an object: its fields are its own)
    stamps, txns = table.field("dateTime"), table.field("transactionId")
    _no_nulls(stamps, txns)
    if not pc.all(pc.match_substring_regex(stamps, _POS_STAMP)).as_py():
        raise NotPlain("a stamp in another form")
    inside = _selected(stamps, business_date, day_starts)
    out = Selected(table, location_id, business_date, tz, receipts_seen=len(raws))
    for index in np.flatnonzero(~inside.to_numpy(zero_copy_only=False)):
        try:
            check_neighbour({"transactionId": txns[index].as_py()}, stamps[index].as_py(),
                            tz, window)
        except Rejected:
            raise NotPlain("a neighbour outside the window") from None
        out.outside_day += 1
    first: dict[str, int] = {}
    keep = inside.to_numpy(zero_copy_only=False).copy()
    day_txns = txns.filter(inside)
    repeated = pc.count_distinct(day_txns).as_py() < len(day_txns)
    for index, txn in enumerate(txns.to_pylist() if repeated else ()):  # (none, mostly)
        if not keep[index]:
            continue
        if txn in first:
            if bytes(raws[first[txn]]) != bytes(raws[index]):
                raise NotPlain("a repeat that differs")
            keep[index] = False
            out.dropped_receipts += 1
        else:
            first[txn] = index
    # (a filter copies every nested line: only where a receipt is left out)
    receipts = table if keep.all() else table.filter(pa.array(keep))
    served_for = pc.struct_field(receipts, ["location", "id"])
    _no_nulls(served_for)
    if not pc.all(pc.is_in(served_for, pa.array(sorted(own)))).as_py():
        raise NotPlain("another location's receipt")
    types = receipts.field("transactionType")
    _no_nulls(types, receipts.field("items"), receipts.field("payments"),
              pc.struct_field(receipts, ["paymentGroup", "name"]))
    out.unknown_types.update({
        row["values"]: row["counts"] for row in pc.value_counts(types).to_pylist()
        if row["values"] not in known_types})
    out.receipts = receipts
    return out


FAILURES = (NotPlain, KeyError, TypeError, ValueError, AttributeError)
"""What making a partition's tables may raise: ``NotPlain`` (it goes receipt by receipt),
or a value no reading takes (the partition's error; Arrow's errors are ``ValueError``s)."""


def flatten_many(selected: list[Selected]) -> list[Flattened | Exception]:
    """The four tables of each partition (``select_pages``'), made for all of them at once
    (per time zone): a partition's fixed cost of some hundred Arrow calls is paid once. A
    group that fails is made partition by partition again, and a partition that fails
    alone gets its exception (``FAILURES``: ``NotPlain`` sends it receipt by receipt); the
    others' tables are the same as made alone."""
    made: list[Flattened | Exception] = [NotPlain("not made")] * len(selected)
    zones: dict[str, list[int]] = {}
    for n, one in enumerate(selected):
        zones.setdefault(one.tz.key, []).append(n)
    for members in zones.values():
        try:
            results: list = _together([selected[n] for n in members])
        except FAILURES as exc:
            results = [exc] if len(members) == 1 else [_alone(selected[n]) for n in members]
        for n, result in zip(members, results, strict=True):
            made[n] = result
    return made


def _alone(selected: Selected) -> Flattened | Exception:
    try:
        return _together([selected])[0]
    except FAILURES as exc:
        return exc


def _together(selected: list[Selected]) -> list[Flattened]:
    """The tables of ``selected`` (one time zone) made at once, cut into each one's."""
    counts = np.array([len(one.receipts) for one in selected], np.int64)
    receipts = selected[0].receipts if len(selected) == 1 else pa.concat_arrays(
        [one.receipts for one in selected])
    owner = np.repeat(np.arange(len(selected)), counts)  # each receipt's partition
    locations = pa.array(np.repeat([one.location_id for one in selected], counts), pa.int32())
    dates = pa.array(np.repeat(np.array([one.business_date for one in selected],
                                        "datetime64[D]"), counts), pa.date32())
    tables, rows_of, dropped_of = _tables(_fields(receipts), locations, dates, selected[0].tz)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    cuts = {name: np.searchsorted(rows_of[name], bounds) for name in tables}
    out = []
    for n, one in enumerate(selected):
        dropped = Counter({"receipts": one.dropped_receipts})
        for name, parents in dropped_of.items():
            dropped[name] = int(np.count_nonzero(owner[parents] == n)) if len(parents) else 0
        out.append(Flattened(
            {name: table.slice(cuts[name][n], cuts[name][n + 1] - cuts[name][n])
             for name, table in tables.items()},
            receipts_seen=one.receipts_seen, outside_day=one.outside_day, dropped=dropped,
            unknown_types=one.unknown_types))
    return out


def _tables(rec: dict[str, pa.Array], locations: pa.Array, dates: pa.Array, tz: ZoneInfo
            ) -> tuple[dict[str, pa.Table], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The four tables of the day's receipts (``rec``: their fields; ``locations`` and
    ``dates``: each receipt's partition); lines, side dishes and payments repeated within
    their receipt dropped. Beside them each table's rows' receipts (ascending) and the
    receipts of the repeats dropped, per table."""

    def keyed(schema: pa.Schema, txn: pa.Array, of: np.ndarray | None, values: dict
              ) -> pa.Table:
        n = len(txn)
        values.update({"location_id": locations if of is None else locations.take(of),
                       "business_date": dates if of is None else dates.take(of),
                       "transaction_id": txn, "extra_fields": pa.nulls(n, pa.string())})
        try:
            return columns.table(schema, values)
        except (ValueError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise NotPlain(str(exc)) from None

    txn = rec["transactionId"]
    local = _wall_clock(rec["dateTime"])
    tables = {"receipts": keyed(RECEIPTS, txn, None, {
        **_columns(rec, RECEIPTS), "date_time_local": local,
        "date_time_utc": columns.utc(local, tz)})}
    items, item_parent, line, item_key, item_dropped = _children(rec["items"], _unique_or_id)
    item_txn = txn.take(item_parent)
    tables["receipt_items"] = keyed(RECEIPT_ITEMS, item_txn, item_parent, {
        **_columns(items, RECEIPT_ITEMS), "item_key": item_key,
        "line_number": pa.array(line, pa.int32()),
        "book_date_local": _wall_clock(items["bookDate"])})
    sides, side_parent, _, side_key, side_dropped = _children(items["sideDishes"],
                                                              _unique_or_id)
    side_receipt = item_parent[side_parent]
    tables["item_side_dishes"] = keyed(ITEM_SIDE_DISHES, item_txn.take(side_parent),
                                       side_receipt, {
        **_columns(sides, ITEM_SIDE_DISHES), "item_key": item_key.take(side_parent),
        "side_dish_key": side_key})
    payments, payment_parent, _, _, payment_dropped = _children(rec["payments"], _id)
    tables["payments"] = keyed(PAYMENTS, txn.take(payment_parent), payment_parent,
                               _columns(payments, PAYMENTS))
    rows_of = {"receipts": np.arange(len(txn)), "receipt_items": item_parent,
               "item_side_dishes": side_receipt, "payments": payment_parent}
    dropped_of = {"receipt_items": item_dropped, "item_side_dishes": item_parent[side_dropped],
                  "payments": payment_dropped}
    return tables, rows_of, dropped_of


def _wall_clock(stamps: pa.Array) -> pa.Array:
    try:
        return pc.strptime(stamps, format="%d.%m.%Y %H:%M:%S", unit="s", error_is_null=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        raise NotPlain("a stamp that is no date") from None


