"""A build uses only lake files that hold what their load committed (#22, item 7)."""

from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pipeline.areas.revenue.commits import with_turnovers, write_revenue_partition
from pipeline.areas.revenue.extract import RevenuePartition, flatten_receipts
from pipeline.core.reporting import Reporter
from pipeline.lake.areafiles import PARQUET_OPTIONS
from pipeline.lake.store import Lake
from pipeline.orchestration.loader import run_build
from pipeline.pos_api.answers import TEXT_DECODER
from pipeline.warehouse import build_warehouse
from pos_sandbox import world
from pos_sandbox.receipts import SandboxData
from pos_sandbox.revenue import RevenueBook
from tests.conftest import make_settings, truth_turnover

pytestmark = pytest.mark.usefixtures("dagster_in_memory")


DAYS = [date(2026, 9, 29) + timedelta(days=n) for n in range(3)]
LOCATIONS = (1001, 1002)
HIT = (1001, DAYS[1])
"""The partition whose file goes bad."""


def revenue_parts(location_id: int, days: list[date]) -> list[RevenuePartition]:
    """The sandbox's receipts of these days, flattened as a load flattens them."""
    location = world.location(location_id)
    book = RevenueBook(SandboxData(), days_kept=2)
    parts = []
    for day in days:
        bodies = [r.body for r in book.calendar_date(location_id, day)]
        parts.append(flatten_receipts(
            [TEXT_DECODER.decode(b"[" + b",".join(bodies) + b"]")],
            location_id=location_id, business_date=day, tz=location.tz,
            short_code=location.short_code))
    return parts


def commit_days(lake: Lake, location_id: int, days: list[date]) -> None:
    """The sandbox's receipts of these days, committed as a load commits them (a commit
    per day)."""
    for part in revenue_parts(location_id, days):
        write_revenue_partition(lake, part)


def committed_file(lake: Lake, location_id: int, day: date) -> Path:
    """The revenue file the newest version holds the location's day in."""
    snapshot = lake.area_table("revenue").snapshot()
    for rel in snapshot.files([day]):
        held = pq.read_table(lake.root / "revenue" / rel, columns=["location_id"])
        if location_id in held.column("location_id").to_pylist():
            return lake.root / "revenue" / rel
    raise AssertionError(f"no file holds {location_id} {day}")


def flip_a_bit_of_net_amount(path: Path) -> None:
    """One bit flipped in the middle of the lines' ``net_amount`` data (what a failing
    disk or a bad copy does)."""
    meta = pq.ParquetFile(path).metadata
    index = next(i for i in range(meta.num_columns)
                 if meta.schema.column(i).path == "receipt_items.list.element.net_amount")
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


def test_a_flipped_bit_fails_its_partition_by_name_and_keeps_its_figures(built):
    settings, lake = built
    target = settings.warehouse.warehouse_path
    before = turnovers(target)
    assert before[HIT] == truth_turnover(*HIT)
    bad = committed_file(lake, *HIT)
    flip_a_bit_of_net_amount(bad)

    result = build_warehouse(lake.root, target, full=True)

    assert [(c.area, c.partition) for c in result.corrupt] == [
        ("revenue", "location_id=1001/business_date=2026-09-30")]
    message = str(result.corrupt[0])
    assert str(bad) in message and "location_id 1001" in message \
        and "business_date 2026-09-30" in message and "CRC" in message
    assert turnovers(target) == before  # the day's figures of the last good build

    # Loaded again, the day is built from its new file.
    commit_days(lake, HIT[0], [HIT[1]])
    result = build_warehouse(lake.root, target)
    assert result.corrupt == [] and result.rebuilt_partitions == {"revenue": 1}
    assert turnovers(target) == before


def test_a_file_rewritten_with_other_amounts_is_refused(built):
    """Pages intact, the amounts not what the load computed (a tool that rewrote the
    file): the build computes each partition's receipts and turnover from its row with
    the revenue macros and compares them with its load's."""
    settings, lake = built
    bad = committed_file(lake, *HIT)
    rows = pq.read_table(bad)
    index = rows.schema.get_field_index("receipt_items")
    rows = rows.set_column(index, "receipt_items", doubled_lines(rows.column(index)))
    pq.write_table(rows, bad, **PARQUET_OPTIONS)

    result = build_warehouse(lake.root, settings.warehouse.warehouse_path, full=True)

    assert len(result.corrupt) == 1
    assert result.corrupt[0].partition == "location_id=1001/business_date=2026-09-30"
    turnover = truth_turnover(*HIT)
    assert f"turnover {(2 * turnover).normalize():f}, its load recorded" \
        in result.corrupt[0].problem
    assert turnovers(settings.warehouse.warehouse_path)[HIT] == turnover


def test_a_commit_whose_tables_do_not_add_up_to_its_figures_is_refused(built):
    """The rows are those committed, but not what the load's figures were computed from
    (a writer's bug)."""
    settings, lake = built
    location = world.location(HIT[0])
    book = RevenueBook(SandboxData(), days_kept=2)
    bodies = [r.body for r in book.calendar_date(*HIT)]
    (part,) = with_turnovers([flatten_receipts(
        [TEXT_DECODER.decode(b"[" + b",".join(bodies) + b"]")],
        location_id=HIT[0], business_date=HIT[1], tz=location.tz)])
    tables = dict(part.tables, receipt_items=doubled(part.tables["receipt_items"]))
    lake.write("revenue", tables, {"location_id": HIT[0], "business_date": HIT[1].isoformat()},
               {"receipts": part.row_counts["receipts"], "turnover_net": part.turnover_net})

    result = build_warehouse(lake.root, settings.warehouse.warehouse_path)

    assert len(result.corrupt) == 1
    receipts = part.row_counts["receipts"]
    assert result.corrupt[0].problem.startswith(
        f"its row holds {receipts} receipts with turnover "
        f"{(2 * part.turnover_net).normalize():f}, its load recorded {receipts} with "
        f"{part.turnover_net.normalize():f}")
    assert turnovers(settings.warehouse.warehouse_path)[HIT] == truth_turnover(*HIT)


def doubled(items: pa.Table) -> pa.Table:
    """``receipt_items`` with every net amount doubled."""
    column = items.schema.get_field_index("net_amount")
    return items.set_column(column, "net_amount", pc.multiply(items["net_amount"], 2).cast(
        items.schema.field("net_amount").type))


def doubled_lines(column: pa.ChunkedArray) -> pa.Array:
    """A nested ``receipt_items`` column with every net amount doubled."""
    lists = column.combine_chunks()
    items = doubled(pa.Table.from_arrays(lists.values.flatten(),
                                         schema=pa.schema(list(lists.type.value_type))))
    structs = pa.StructArray.from_arrays([c.combine_chunks() for c in items.columns],
                                         fields=list(items.schema))
    return pa.ListArray.from_arrays(lists.offsets, structs).cast(lists.type)


def test_a_new_partition_that_is_corrupt_is_left_out_and_the_build_fails(built):
    settings, lake = built
    night = DAYS[-1] + timedelta(days=1)
    for location_id in LOCATIONS:
        commit_days(lake, location_id, [night])
    flip_a_bit_of_net_amount(committed_file(lake, 1002, night))

    report = run_build(settings, progress=Reporter())

    assert not report.ok
    assert any("location_id 1002, business_date " + night.isoformat() in e
               for e in report.errors), report.errors
    days = turnovers(settings.warehouse.warehouse_path)
    assert days[(1001, night)] == truth_turnover(1001, night)
    assert (1002, night) not in days  # never built from files that were not committed


def test_a_new_column_is_added_to_the_table_and_older_rows_read_it_as_null(built):
    """A table that gains a column (a field a newer pipeline keeps): the lake's table
    takes it by an empty commit that merges the schemas; rows written before answer it as
    null, and every figure stays."""
    settings, lake = built
    target = settings.warehouse.warehouse_path
    before = turnovers(target)
    location = world.location(HIT[0])
    book = RevenueBook(SandboxData(), days_kept=2)
    bodies = [r.body for r in book.calendar_date(*HIT)]
    part = flatten_receipts([TEXT_DECODER.decode(b"[" + b",".join(bodies) + b"]")],
                            location_id=HIT[0], business_date=HIT[1], tz=location.tz,
                            short_code=location.short_code)
    items = part.tables["receipt_items"]
    part.tables["receipt_items"] = items.append_column(
        "new_field", pa.array(["x"] * items.num_rows, pa.string()))
    write_revenue_partition(lake, part)
    read = lake.read("revenue", "receipt_items",
                     {"location_id": 1002, "business_date": HIT[1].isoformat()})
    assert read.column("new_field").null_count == read.num_rows > 0

    result = build_warehouse(lake.root, target, full=True)

    assert result.corrupt == []
    assert turnovers(target) == before


RECENT = [date.today() - timedelta(days=n) for n in (3, 2)]
"""Days within the built-in sandbox's history (its configured start_date)."""


def _broken_lake(tmp_path: Path, break_it) -> Path:
    """A sandbox lake of two loads (versions 0 to 2 of its revenue table), then broken by
    ``break_it(table folder)``; its data folder."""
    import shutil

    data = tmp_path / "data"
    lake = Lake(data / "lake")
    for day in RECENT:
        for part in revenue_parts(1001, [day]):
            write_revenue_partition(lake, part)
    table = data / "lake" / "revenue"
    assert len(list((table / "_delta_log").glob("*.json"))) == 3
    break_it(table)
    shutil.rmtree(data / "dagster_home", ignore_errors=True)
    return data


def _torn_newest(table: Path) -> None:
    newest = table / "_delta_log" / f"{2:020d}.json"
    newest.write_bytes(newest.read_bytes()[:150])


def _lost_middle(table: Path) -> None:
    (table / "_delta_log" / f"{1:020d}.json").unlink()


def _lost_file(table: Path) -> None:
    sorted(table.glob("*/*.parquet"))[0].unlink()


@pytest.mark.parametrize(("break_it", "said"), [
    (_torn_newest, "its Delta log entry _delta_log/00000000000000000002.json is not whole "
                   "(line 1 is not JSON): a write cut short: move the file aside"),
    (_lost_middle, "its Delta log lacks version 1 (_delta_log/00000000000000000001.json, "
                   "between versions 0 and 2): the table cannot be read past it; restore "
                   "that file from a backup of the lake"),
    (_lost_file, "is missing (deleted or lost; the Delta log "),
], ids=["torn-newest-entry", "lost-middle-entry", "lost-data-file"])
def test_a_broken_lake_table_is_named_with_its_file_by_every_command(
        tmp_path, monkeypatch, capsys, break_it, said):
    """``status``, ``build`` and ``load`` each name the table, the file and what to do,
    in one line, with no traceback and no delta-rs debug dump."""
    from pipeline.cli import main

    data = _broken_lake(tmp_path, break_it)
    monkeypatch.delenv("POS_ETL_CONFIG", raising=False)
    monkeypatch.setenv("POS_ETL_DATA_DIR", str(data))
    table = f"lake table {data / 'lake' / 'revenue'}: "
    day = RECENT[0].isoformat()
    for command in (["status"], ["build"],
                    ["load", "--start", day, "--end", day, "--location", "1001",
                     "--no-catalog", "--no-models"]):
        code = main(command)
        out = capsys.readouterr()
        text = out.out + out.err
        assert code == 1, (command, text)
        if break_it is _lost_file and command[0] == "load":
            continue  # the load replaces the partition whose file was lost: it works
        named = table if break_it is not _lost_file or command[0] == "status" else \
            "lake revenue partition location_id 1001, "  # (the build's own words)
        assert named in text and said in text, (command, text)
        assert "Traceback" not in text and "ParsedLogPath" not in text, text
