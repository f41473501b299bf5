"""The column-wise path of the flattening against the receipt-by-receipt one: on the
sandbox's answers, and on each field of a receipt given each awkward value a server could
send, both end the same way (the same tables and counts, or the same error)."""

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import msgspec
import pyarrow as pa
import pytest

from pipeline.areas.revenue import columnar
from pipeline.areas.revenue.commits import with_turnovers
from pipeline.areas.revenue.extract import (
    KNOWN_TRANSACTION_TYPES,
    flatten_receipts,
    make_tables,
    request_window,
)
from pipeline.core.untrusted import Redactor
from pipeline.extract.keys import refuse_keys
from pipeline.pos_api.answers import (
    RAW_RECEIPTS,
    TEXT_DECODER,
    ReceiptPage,
    refuse_repeated_keys,
)
from pipeline.pos_api.errors import ContractError
from pos_sandbox import world
from pos_sandbox.receipts import SandboxData
from pos_sandbox.revenue import RevenueBook

DAY = date(2026, 6, 5)
LOCATION = world.location_by_id(1001)
WINDOW = request_window(DAY, LOCATION.tz, timedelta(minutes=90))


def page(receipts: list) -> bytes:
    return msgspec.json.encode(receipts)


def answer(body: bytes) -> ReceiptPage:
    """A page as the client gives it."""
    def rows():
        value = TEXT_DECODER.decode(body)
        refuse_repeated_keys(body, value, "location 1001: revenue report", 1001)
        return value
    return ReceiptPage(RAW_RECEIPTS.decode(body), rows)


def outcome(pages, columns: bool, day_starts: time = time(0)):
    """The partition's tables and counts, or the error's message."""
    try:
        part = flatten_receipts(
            [answer(p) for p in pages] if columns else [answer(p).rows() for p in pages],
            location_id=1001, business_date=DAY, tz=LOCATION.tz, short_code="VIE01",
            day_starts=day_starts, window=WINDOW)
    except ContractError as exc:
        return str(exc)
    with_turnovers([part])  # as the commit computes it, from each reading's tables
    return ({name: table.to_pylist() for name, table in part.tables.items()},
            part.receipts_seen, part.outside_day, dict(part.duplicates_dropped),
            dict(part.unknown_types), dict(part.unknown_fields), part.turnover_net)


def read_by_columns(pages) -> bool:
    """Whether the column-wise path takes these pages (rather than handing them on)."""
    try:
        selected = columnar.select_pages(
            [RAW_RECEIPTS.decode(p) for p in pages], location_id=1001, own={"1001", "VIE01"},
            known_types=KNOWN_TRANSACTION_TYPES, business_date=DAY, tz=LOCATION.tz,
            day_starts=time(0), window=WINDOW)
    except columnar.NotPlain:
        return False
    return isinstance(columnar.flatten_many([selected])[0], columnar.Flattened)


@pytest.fixture
def taken(monkeypatch) -> list:
    """The partitions the column-wise path made the tables of (its results, as the
    flattening used them)."""
    results, making = [], columnar.flatten_many

    def spy(*args, **kwargs):
        made = making(*args, **kwargs)
        results.extend(m for m in made if isinstance(m, columnar.Flattened))
        return made

    monkeypatch.setattr(columnar, "flatten_many", spy)
    return results


@pytest.fixture(scope="module")
def served() -> list[dict]:
    """The sandbox's receipts of the window around the day (repeated lines and all), as
    dicts."""
    book = RevenueBook(SandboxData(), days_kept=3)
    bodies = [r.body for d in (DAY - timedelta(days=1), DAY, DAY + timedelta(days=1))
              for r in book.calendar_date(1001, d)]
    after, before = (t.replace(tzinfo=None) for t in WINDOW)
    return [r for r in TEXT_DECODER.decode(b"[" + b",".join(bodies) + b"]")
            if after < datetime.strptime(r["dateTime"], "%d.%m.%Y %H:%M:%S") < before]


def test_the_sandboxs_days_are_read_by_columns_into_the_same_tables(served):
    pages = [page(served[i:i + 200]) for i in range(0, len(served), 200)]
    assert read_by_columns(pages)
    fast, slow = outcome(pages, True), outcome(pages, False)
    assert fast == slow
    tables, seen, outside, dropped = fast[:4]
    assert len(tables["receipts"]) > 300 and outside > 0 and seen == len(served)
    assert dropped["receipt_items"] > 0 and dropped["item_side_dishes"] > 0
    # a business day from 04:00: the next morning's receipts belong to it
    assert outcome(pages, True, time(4)) == outcome(pages, False, time(4))


def paths(obj, prefix=()):
    """Every field path of a JSON object (into the first element of each list)."""
    for key, value in obj.items():
        yield (*prefix, key)
        if isinstance(value, dict):
            yield from paths(value, (*prefix, key))
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            yield from paths(value[0], (*prefix, key, 0))


ABSENT = object()
AWKWARD = [ABSENT, None, "", " 7", "x", -1, 2**70, "1.5", 1.5, "1e2", "1.23456", True, [],
           {"id": "x"}, "2026-06-05T12:00:00", "05.06.2026 25:00:00"]


def mutated(receipt: dict, path: tuple, value) -> dict:
    receipt = msgspec.json.decode(msgspec.json.encode(receipt))
    node = receipt
    for key in path[:-1]:
        node = node[key]
    if value is ABSENT:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return receipt


def test_each_field_given_each_awkward_value_ends_the_same_both_ways(served, taken):
    """A receipt of the day with lines, side dishes and payments; each of its fields in
    turn given each value of ``AWKWARD``: both paths agree, to the table or the error."""
    def rich(r):
        return r["dateTime"].startswith("05.06.2026") and r["payments"] and any(
            i.get("sideDishes") for i in r["items"])

    base = next(r for r in served if rich(r))
    others = [r for r in served if r is not base][:4]
    compared = 0
    for path in sorted(set(paths(base)), key=repr):
        for value in AWKWARD:
            receipt = mutated(base, path, value)
            pages = [page([*others[:2], receipt, *others[2:]])]
            assert outcome(pages, True) == outcome(pages, False), (path, value)
            compared += 1
    assert compared > 1000 and len(taken) > 100  # both paths were taken


def test_repeats_and_repeated_keys_end_the_same_both_ways(served):
    day = [r for r in served if r["dateTime"].startswith("05.06.2026")][:30]
    same = page([*day, day[3]])  # a receipt served twice, the same: dropped, counted
    assert read_by_columns([same]) and outcome([same], True) == outcome([same], False)
    changed = page([*day, {**day[3], "tip": "9.99"}])  # two versions: rejected
    assert outcome([changed], True) == outcome([changed], False)
    assert "two different versions" in outcome([changed], True)
    reordered = page([*day, dict(reversed(list(day[3].items())))])  # the same, reordered
    assert outcome([reordered], True) == outcome([reordered], False)
    twice = page(day).replace(b'"tip":', b'"tip":"1.00","tip":', 1)  # a key twice
    assert "appears twice" in outcome([twice], True) == outcome([twice], False)
    other = page([*day, {**day[4], "transactionId": "x", "location": {"id": "1002"}}])
    assert "another location" in outcome([other], True) == outcome([other], False)
    short_code = page([{**r, "location": {**r["location"], "id": "VIE01"}} for r in day])
    assert read_by_columns([short_code])
    assert outcome([short_code], True) == outcome([short_code], False)


def test_a_stamp_far_outside_the_window_ends_the_same_both_ways(served):
    day = [r for r in served if r["dateTime"].startswith("05.06.2026")][:30]
    far = page([*day, {**day[2], "transactionId": "far", "dateTime": "01.01.2026 12:00:00"}])
    assert "outside the requested window" in outcome([far], True) == outcome([far], False)


class _Keys:
    """What the key check asks of a source: the pattern of location 1001's key."""

    def key_pattern(self, location_id):
        return Redactor([world.api_key(1001)]).pattern


def test_partitions_whose_tables_are_made_together_end_as_each_made_alone(served):
    """A load makes the tables of many partitions at once (``make_tables``): each ends as
    flattened alone, to the table, count and error, also beside a partition whose lines
    the column-wise path cannot read (it goes receipt by receipt: read, or refused by
    name), one in another time zone, and one with a receipt echoing the key."""
    day = [r for r in served if r["dateTime"].startswith("05.06.2026")]
    rich = next(n for n, r in enumerate(day) if r["items"] and r["payments"])

    def with_item(field, value):
        receipts = [mutated(r, ("items", 0, field), value) if n == rich else r
                    for n, r in enumerate(day)]
        return [page(receipts[:200]), page(receipts[200:])]

    plain = [page(served[i:i + 200]) for i in range(0, len(served), 200)]
    cases = [
        (plain, LOCATION.tz),
        (with_item("bookDate", "2026-06-05T12:00:00"), LOCATION.tz),  # read receipt by receipt
        (with_item("id", None), LOCATION.tz),  # no key of the line: refused by name
        (plain, ZoneInfo("Europe/London")),
        ([page(day[:40])], LOCATION.tz),
        ([page([*day[:5], mutated(day[5], ("staff", "name"), world.api_key(1001))])],
         LOCATION.tz),  # the key echoed: refused
    ]

    def flattened(pages, tz, defer):
        return flatten_receipts([answer(p) for p in pages], location_id=1001, business_date=DAY,
                                tz=tz, short_code="VIE01", window=None, defer=defer)

    def ended(part, error):
        if error is not None:
            return str(error)
        return ({name: table.to_pylist() for name, table in part.tables.items()},
                part.receipts_seen, part.outside_day, dict(part.duplicates_dropped),
                dict(part.unknown_types), dict(part.unknown_fields))

    alone = []
    for pages, tz in cases:
        try:
            part = flattened(pages, tz, defer=False)  # as a partition of its own is
            refuse_keys(_Keys(), part.tables, f"location 1001 business date {DAY}", 1001)
            alone.append(ended(part, None))
        except ContractError as exc:
            alone.append(str(exc))
    assert isinstance(alone[0], tuple) and isinstance(alone[1], tuple)  # read, both
    assert alone[0][0] != alone[3][0]  # the other zone's UTC stamps differ
    assert "field" in alone[2] and "API key" in alone[5]
    assert alone[0][3]["receipt_items"] > 0  # repeated lines dropped and counted
    # the readable ones made at once; then all, where a group that fails is made again
    for chosen in ([0, 4, 3, 0, 5], list(range(len(cases)))):
        together = [flattened(*cases[n], defer=True) for n in chosen]
        assert all(part.pending is not None for part in together)
        errors = make_tables(_Keys(), together)
        assert [ended(part, error) for part, error in zip(together, errors, strict=True)] \
            == [alone[n] for n in chosen]


def test_an_error_in_making_one_partitions_tables_fails_that_partition_alone(served,
                                                                             monkeypatch):
    """An error Arrow raises while a batch's tables are made (here the UTC conversion of
    one zone's stamps) fails the partitions it concerns by name, as one flattened alone
    would fail; the others of the batch are made."""
    from pipeline.extract import columns

    utc = columns.utc

    def failing(local, tz):
        if tz.key == "Europe/London":
            raise pa.ArrowInvalid("no such instant")
        return utc(local, tz)

    monkeypatch.setattr(columns, "utc", failing)
    pages = [page(served[i:i + 200]) for i in range(0, len(served), 200)]
    parts = [flatten_receipts([answer(p) for p in pages], location_id=1001, business_date=DAY,
                              tz=ZoneInfo(zone), short_code="VIE01", window=None, defer=True)
             for zone in ("Europe/Vienna", "Europe/London", "Europe/Vienna")]
    errors = make_tables(_Keys(), parts)
    assert errors[0] is None and errors[2] is None
    assert str(errors[1]) == "location 1001, business date 2026-06-05: no such instant"
    assert parts[0].row_counts == parts[2].row_counts and parts[0].row_counts["receipts"] > 300
    with pytest.raises(ContractError, match="no such instant"):  # alone: the same error
        flatten_receipts([answer(p) for p in pages], location_id=1001, business_date=DAY,
                         tz=ZoneInfo("Europe/London"), short_code="VIE01", window=None)


def test_an_error_in_reading_a_partitions_pages_is_that_partitions_error(served, monkeypatch):
    """An error Arrow raises while a partition's pages are read and checked is a
    ``ContractError`` naming the location and date (the load fails that partition), as
    the flattening always made it."""
    def failing(*args):
        raise pa.ArrowInvalid("no such day")

    monkeypatch.setattr(columnar, "_selected", failing)
    pages = [page(served[:200])]
    for defer in (False, True):
        with pytest.raises(ContractError, match="^location 1001, business date 2026-06-05: "
                                                "no such day$"):
            flatten_receipts([answer(p) for p in pages], location_id=1001, business_date=DAY,
                             tz=LOCATION.tz, short_code="VIE01", window=None, defer=defer)
