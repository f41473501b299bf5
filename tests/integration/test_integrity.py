"""A build uses only lake files that hold what their load committed (#22, item 7)."""

import json
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.core.reporting import Reporter
from pipeline.extract.revenue import flatten_receipts, write_revenue_partition
from pipeline.lake.store import (
    FILES_KEY,
    LOAD_FILE,
    LOAD_SCHEMA,
    PARQUET_OPTIONS,
    Lake,
    columns_digest,
    data_file_name,
    file_digest,
)
from pipeline.orchestration.loader import run_build
from pipeline.pos_api.client import _TEXT_DECODER
from pipeline.warehouse import build_warehouse
from pos_sandbox import world
from pos_sandbox.receipts import SandboxData
from pos_sandbox.revenue import RevenueBook
from tests.conftest import make_settings, truth_turnover

DAYS = [date(2026, 9, 29) + timedelta(days=n) for n in range(3)]
LOCATIONS = (1001, 1002)
HIT = (1001, DAYS[1])
"""The partition whose file goes bad."""


def commit_days(lake: Lake, location_id: int, days: list[date], publish: bool = True) -> None:
    """The sandbox's receipts of these days, committed as a load commits them (and, with
    ``publish``, each published to the Delta logs at once)."""
    location = world.location(location_id)
    book = RevenueBook(SandboxData(), days_kept=2)
    for day in days:
        bodies = [r.body for r in book.calendar_date(location_id, day)]
        part = flatten_receipts([_TEXT_DECODER.decode(b"[" + b",".join(bodies) + b"]")],
                                location_id=location_id, business_date=day, tz=location.tz,
                                short_code=location.short_code)
        write_revenue_partition(lake, part, publish)


def committed_file(lake: Lake, table: str, location_id: int, day: date) -> Path:
    partition = {"location_id": location_id, "business_date": day.isoformat()}
    load_id = lake.committed("revenue", partition).load_id
    return lake.root / table / f"location_id={location_id}" / \
        f"business_date={day.isoformat()}" / data_file_name(load_id)


def flip_a_bit_of_net_amount(path: Path) -> None:
    """One bit flipped in the middle of the ``net_amount`` column's data (what a failing
    disk or a bad copy does)."""
    meta = pq.ParquetFile(path).metadata
    index = meta.schema.to_arrow_schema().get_field_index("net_amount")
    column = meta.row_group(0).column(index)
    data = bytearray(path.read_bytes())
    data[column.data_page_offset + column.total_compressed_size // 2] ^= 0x10
    path.write_bytes(bytes(data))


def turnovers(path: Path) -> dict[tuple[int, date], Decimal]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {(loc, day): t for loc, day, t in con.execute(
            "select location_id, business_date, turnover_net from fct_turnover_daily")
            .fetchall()}


@pytest.fixture
def built(tmp_path):
    """Two locations' three days committed and built."""
    settings = make_settings("http://127.0.0.1:9", tmp_path / "data")
    lake = Lake(settings.warehouse.lake_dir)
    for location_id in LOCATIONS:
        commit_days(lake, location_id, DAYS)
    build_warehouse(lake.root, settings.warehouse.warehouse_path)
    return settings, lake


def drop_digests(lake: Lake, location_id: int, day: date) -> None:
    """The commit record as a load before digests wrote it (the page CRCs are checked)."""
    path = lake.load_dir("revenue", {"location_id": location_id,
                                     "business_date": day.isoformat()}) / LOAD_FILE
    record = pq.read_table(path).to_pylist()
    metadata = json.loads(record[0]["metadata"])
    del metadata[FILES_KEY]
    record[0]["metadata"] = json.dumps(metadata)
    pq.write_table(pa.Table.from_pylist(record, schema=LOAD_SCHEMA), path)


@pytest.mark.parametrize("record", ["with digests", "of a load before digests"])
def test_a_flipped_bit_fails_its_partition_by_name_and_keeps_its_figures(built, record):
    settings, lake = built
    target = settings.warehouse.warehouse_path
    before = turnovers(target)
    assert before[HIT] == truth_turnover(*HIT)
    bad = committed_file(lake, "receipt_items", *HIT)
    flip_a_bit_of_net_amount(bad)
    if record != "with digests":
        drop_digests(lake, *HIT)

    result = build_warehouse(lake.root, target, full=True)

    assert [(c.area, c.partition) for c in result.corrupt] == [
        ("revenue", "location_id=1001/business_date=2026-09-30")]
    message = str(result.corrupt[0])
    assert str(bad) in message and "location_id 1001" in message \
        and "business_date 2026-09-30" in message
    assert turnovers(target) == before  # the day's figures of the last good build

    # Loaded again, the day is built from its new files.
    commit_days(lake, HIT[0], [HIT[1]])
    result = build_warehouse(lake.root, target)
    assert result.corrupt == [] and result.rebuilt_partitions == {"revenue": 1}
    assert turnovers(target) == before


def test_a_file_rewritten_with_other_amounts_is_refused(built):
    """Pages intact, the amounts not what the load committed (a tool that rewrote it)."""
    settings, lake = built
    bad = committed_file(lake, "receipt_items", *HIT)
    items = pq.read_table(bad)
    pq.write_table(doubled(items), bad, **PARQUET_OPTIONS)

    result = build_warehouse(lake.root, settings.warehouse.warehouse_path, full=True)

    assert [c.problem for c in result.corrupt] == [
        f"{bad} is not the file its load committed (its SHA-256 differs)"]
    assert turnovers(settings.warehouse.warehouse_path)[HIT] == truth_turnover(*HIT)


def test_a_commit_whose_files_do_not_add_up_to_its_figures_is_refused(built):
    """The files are those committed, but not what the load's figures were computed from
    (a writer's bug): the build computes the receipts and turnover of the files with the
    revenue macros and compares."""
    settings, lake = built
    location = world.location(HIT[0])
    book = RevenueBook(SandboxData(), days_kept=2)
    bodies = [r.body for r in book.calendar_date(*HIT)]
    part = flatten_receipts([_TEXT_DECODER.decode(b"[" + b",".join(bodies) + b"]")],
                            location_id=HIT[0], business_date=HIT[1], tz=location.tz)
    tables = dict(part.tables, receipt_items=doubled(part.tables["receipt_items"]))
    lake.write("revenue", tables, {"location_id": HIT[0], "business_date": HIT[1].isoformat()},
               {"receipts": part.row_counts["receipts"], "turnover_net": part.turnover_net})

    result = build_warehouse(lake.root, settings.warehouse.warehouse_path)

    assert len(result.corrupt) == 1
    receipts = part.row_counts["receipts"]
    assert result.corrupt[0].problem.startswith(
        f"the files hold {receipts} receipts with turnover "
        f"{(2 * part.turnover_net).normalize():f}, the commit record {receipts} with "
        f"{part.turnover_net.normalize():f}")
    assert turnovers(settings.warehouse.warehouse_path)[HIT] == truth_turnover(*HIT)


def doubled(items: pa.Table) -> pa.Table:
    """``receipt_items`` with every net amount doubled."""
    column = items.schema.get_field_index("net_amount")
    return items.set_column(column, "net_amount", pc.multiply(items["net_amount"], 2).cast(
        items.schema.field("net_amount").type))


def test_a_new_partition_that_is_corrupt_is_left_out_and_the_build_fails(built):
    settings, lake = built
    night = DAYS[-1] + timedelta(days=1)
    for location_id in LOCATIONS:
        commit_days(lake, location_id, [night])
    flip_a_bit_of_net_amount(committed_file(lake, "receipt_items", 1002, night))

    report = run_build(settings, progress=Reporter())

    assert not report.ok
    assert any("location_id 1002, business_date " + night.isoformat() in e
               for e in report.errors), report.errors
    days = turnovers(settings.warehouse.warehouse_path)
    assert days[(1001, night)] == truth_turnover(1001, night)
    assert (1002, night) not in days  # never built from files that were not committed


def rewrite_without(lake: Lake, table: str, location_id: int, day: date, column: str,
                    record_columns: bool) -> None:
    """The partition's file of ``table`` as an older pipeline wrote it, before ``column``
    existed, with a commit record that says so (``record_columns``) or, as a record of
    that time, says nothing of the file's columns."""
    path = committed_file(lake, table, location_id, day)
    data = pq.read_table(path, partitioning=None)
    pq.write_table(data.drop_columns([column]), path, **PARQUET_OPTIONS)
    record_path = lake.load_dir("revenue", {"location_id": location_id,
                                            "business_date": day.isoformat()}) / LOAD_FILE
    record = pq.read_table(record_path).to_pylist()
    metadata = json.loads(record[0]["metadata"])
    files = json.loads(metadata[FILES_KEY])
    files[table]["sha256"] = file_digest(path)
    if record_columns:
        files[table]["columns"] = columns_digest(data.drop_columns([column]).schema)
    else:
        for entry in files.values():
            entry.pop("columns")
    metadata[FILES_KEY] = json.dumps(files)
    record[0]["metadata"] = json.dumps(metadata)
    pq.write_table(pa.Table.from_pylist(record, schema=LOAD_SCHEMA), record_path)


@pytest.mark.parametrize("record_columns", [True, False], ids=["recorded", "not recorded"])
def test_files_of_an_older_layout_are_read_beside_the_current_ones(built, record_columns):
    """Files of one table with other columns (a load before a column existed) are read
    together with the others: the missing column is null in their rows only, and every
    figure stays. The build reads files of the same recorded columns without opening each
    to match its columns by name."""
    settings, lake = built
    target = settings.warehouse.warehouse_path
    before = turnovers(target)
    rewrite_without(lake, "receipt_items", *HIT, "tax_name", record_columns)
    with duckdb.connect(str(target), read_only=True) as con:
        named = con.execute("select count(*) from fct_receipt_items "
                            "where tax_name is not null").fetchone()[0]
    assert named > 0

    result = build_warehouse(lake.root, target, full=True)

    assert result.corrupt == []
    assert turnovers(target) == before
    with duckdb.connect(str(target), read_only=True) as con:
        by_day = dict(con.execute(
            "select location_id || '/' || business_date, count(tax_name) = count(*) "
            "from fct_receipt_items group by all").fetchall())
    hit = f"{HIT[0]}/{HIT[1]}"
    assert by_day.pop(hit) is False  # the older file's lines have no tax name
    assert set(by_day.values()) == {True}
