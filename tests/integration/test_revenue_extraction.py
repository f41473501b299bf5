"""Revenue partitions in the lake: exact to the cent against the sandbox's own truth."""

from datetime import date, datetime, timedelta
from decimal import Decimal

import httpx
import pyarrow as pa
import pytest
from deltalake import DeltaTable

from pipeline.areas.revenue.commits import load_revenue_partition
from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.lake.store import Lake
from pipeline.orchestration.resources import opened, pos_resource
from pipeline.pos_api.errors import ContractError
from pos_sandbox.app import Faults, SandboxConfig
from pos_sandbox.receipts import SandboxData, receipts_on
from pos_sandbox.server import running_sandbox
from tests.conftest import make_settings, source_with, truth_turnover

DAY = date(2026, 11, 20)
TRUTH = SandboxData()


def lake_table(settings, table, location_id, day):
    return Lake(settings.warehouse.lake_dir).read(
        "revenue", table, {"location_id": location_id, "business_date": day.isoformat()})


@pytest.mark.parametrize("location_id", [1001, 1002, 1003])
def test_partition_matches_the_generator_to_the_cent(settings, lake, location_id):
    with opened(pos_resource(settings)) as source:
        part = load_revenue_partition(source, lake, location_id, DAY)
    truth = receipts_on(location_id, DAY, TRUTH)
    receipts = lake_table(settings, "receipts", location_id, DAY)
    items = lake_table(settings, "receipt_items", location_id, DAY)
    payments = lake_table(settings, "payments", location_id, DAY)
    sides = lake_table(settings, "item_side_dishes", location_id, DAY)
    assert sorted(receipts["transaction_id"].to_pylist()) == sorted(
        r.transaction_id for r in truth)
    assert items.num_rows == sum(len(r.items) for r in truth)
    assert payments.num_rows == sum(len(r.payments) for r in truth)
    assert sides.num_rows == sum(len(i.side_dishes or []) for r in truth for i in r.items)
    assert sum(payments["amount"].to_pylist()) == sum(p.amount for r in truth for p in r.payments)
    lines = items.to_pylist()
    assert sum(x["net_amount"] * x["quantity"] for x in lines) == sum(
        i.net_amount * i.quantity for r in truth for i in r.items)
    assert part.turnover_net == truth_turnover(location_id, DAY) > 0
    assert pa.types.is_decimal(items.schema.field("net_amount").type)
    assert pa.types.is_decimal(receipts.schema.field("total_amount").type)


def test_fan_out_duplicates_are_dropped_and_counted(settings, lake):
    with opened(pos_resource(settings)) as source:
        part = load_revenue_partition(source, lake, 1001, DAY)
    assert part.duplicates_dropped["receipt_items"] > 0
    assert part.duplicates_dropped["payments"] > 0
    assert part.duplicates_dropped["item_side_dishes"] > 0


def test_older_configuration_dedupes_on_item_id(settings, lake):
    with opened(pos_resource(settings)) as source:
        part = load_revenue_partition(source, lake, 1003, DAY)
    items = part.tables["receipt_items"]
    assert items["unique_id"].null_count == items.num_rows
    assert items["item_key"].to_pylist() == items["item_id"].to_pylist()
    assert part.tables["item_side_dishes"].num_rows == 0
    assert part.duplicates_dropped["receipt_items"] > 0


def test_midnight_receipts_land_in_exactly_one_partition(settings, lake):
    days = [DAY - timedelta(days=1), DAY, DAY + timedelta(days=1)]
    with opened(pos_resource(settings)) as source:
        parts = [load_revenue_partition(source, lake, 1001, d) for d in days]
    ids = [t for p in parts for t in p.tables["receipts"]["transaction_id"].to_pylist()]
    assert len(ids) == len(set(ids))
    local = parts[1].tables["receipts"]["date_time_local"].to_pylist()
    assert datetime(2026, 11, 20, 0, 0, 0) in local  # the Nullbeleg and the midnight payer
    assert all(t.date() == DAY for t in local)
    assert parts[1].outside_day > 0


def test_dst_autumn_day_keeps_every_receipt_once_with_correct_utc(settings, lake):
    day = date(2026, 10, 25)  # Vienna: 03:00 CEST -> 02:00 CET
    with opened(pos_resource(settings)) as source:
        parts = [load_revenue_partition(source, lake, 1002, d)
                 for d in (day, day + timedelta(days=1))]
    truth = receipts_on(1002, day, TRUTH) + receipts_on(1002, day + timedelta(days=1), TRUTH)
    got = [t for p in parts for t in p.tables["receipts"]["transaction_id"].to_pylist()]
    assert sorted(got) == sorted(r.transaction_id for r in truth)
    rows = parts[0].tables["receipts"].to_pylist()
    offsets = {(r["date_time_local"] - r["date_time_utc"].replace(tzinfo=None)) for r in rows}
    assert offsets == {timedelta(hours=2), timedelta(hours=1)}
    late = [r for r in rows if r["date_time_local"].hour >= 4]
    assert all(r["date_time_local"] - r["date_time_utc"].replace(tzinfo=None)
               == timedelta(hours=1) for r in late)


def test_no_receipt_is_stamped_inside_the_spring_gap():
    def at_two(day):  # the hotel closes its night at 02:30
        return [r.date_time for r in receipts_on(1002, day, TRUTH) if r.date_time.hour == 2]

    assert at_two(date(2026, 3, 28))  # an ordinary night
    assert not at_two(date(2026, 3, 29))  # Vienna: 02:00 CET -> 03:00 CEST, no 02:xx
    moved = [r.date_time for r in receipts_on(1002, date(2026, 3, 29), TRUTH)
             if r.transaction_type == "Tagesabschluss"]
    assert moved == [datetime(2026, 3, 29, 3, 30)]


def test_faults_are_recovered_with_identical_output(settings, lake, tmp_path, sandbox_keys):
    with opened(pos_resource(settings)) as source:
        clean = load_revenue_partition(source, lake, 1002, DAY)
    faults = Faults(rate_429=0.3, rate_5xx=0.2, retry_after_seconds=0)
    with running_sandbox(SandboxConfig(faults=faults)) as url:
        flaky_settings = make_settings(url, tmp_path / "flaky", page_size=60, max_attempts=20)
        with opened(pos_resource(flaky_settings)) as source:
            flaky = load_revenue_partition(source, lake, 1002, DAY)
    assert flaky.stats.retries > 0
    for name, table in clean.tables.items():
        assert flaky.tables[name].equals(table), name


def test_rerun_is_idempotent_and_keeps_the_replaced_file_for_older_readers(settings, lake):
    partition = {"location_id": 1001, "business_date": DAY.isoformat()}
    folder = lake.root / "revenue" / f"business_date={DAY}"
    with opened(pos_resource(settings)) as source:
        load_revenue_partition(source, lake, 1001, DAY)
        before = {n: lake.read("revenue", n, partition) for n in REVENUE_TABLES}
        first = {p.name for p in folder.iterdir()}
        load_revenue_partition(source, lake, 1001, DAY)
    for name, table in before.items():
        assert lake.read("revenue", name, partition).equals(table)
    # the new file, and the one it replaced (kept for readers of the older version until
    # housekeeping's vacuum); the newest version holds the new one only
    files = {p.name for p in folder.iterdir()}
    assert len(files) == 2 and first < files
    assert [u.rsplit("/", 1)[1] for u in DeltaTable(str(lake.root / "revenue")).file_uris()] \
        == sorted(files - first)


def test_crash_mid_write_leaves_the_old_partition(settings, lake, monkeypatch):
    import pipeline.lake.areafiles

    partition = {"location_id": 1001, "business_date": DAY.isoformat()}
    with opened(pos_resource(settings)) as source:
        load_revenue_partition(source, lake, 1001, DAY)
        old_tables = {n: lake.read("revenue", n, partition) for n in REVENUE_TABLES}
        version = DeltaTable(str(lake.root / "revenue")).version()

        def disk_full(path, mode="r", *args, **kwargs):
            handle = open(path, mode, *args, **kwargs)  # noqa: SIM115 (the writer's)
            if "x" in mode:  # half a file on disk, then the disk is full
                with handle:
                    handle.write(b"PAR1" + b"\0" * 100)
                raise OSError("disk full")
            return handle

        monkeypatch.setattr(pipeline.lake.areafiles, "open", disk_full, raising=False)
        with pytest.raises(OSError, match="disk full"):
            load_revenue_partition(source, lake, 1001, DAY)
    for name, table in old_tables.items():
        assert lake.read("revenue", name, partition).equals(table)
    assert DeltaTable(str(lake.root / "revenue")).version() == version  # no commit


def _mock_source(settings, pages):
    """A source whose revenue report answers with the given receipt lists."""
    import msgspec

    def handler(request):
        return httpx.Response(200, content=msgspec.json.encode(pages.pop(0) if pages else []))

    return source_with(settings, transport=httpx.MockTransport(handler))


def _sandbox_rows(location_id=1001):
    from pos_sandbox.receipts import wire_receipt
    return [wire_receipt(r, TRUTH) for r in receipts_on(location_id, DAY, TRUTH)]


@pytest.mark.parametrize(("break_it", "field"), [
    (lambda r: r["items"][0].pop("netAmount"), "items.0.netAmount"),
    (lambda r: r.update(dateTime="2026-13-45 25:00"), "dateTime"),
    (lambda r: r["items"][0].update(quantity="lots"), "field quantity: 'lots' is not a decimal"),
    (lambda r: r.pop("paymentGroup"), "paymentGroup"),
])
def test_contract_breaks_name_location_date_and_field(settings, lake, break_it, field):
    rows = _sandbox_rows()
    target = next(r for r in rows if r["items"] and r["transactionType"] == "Abrechnen")
    break_it(target)
    with _mock_source(settings, [rows]) as source, pytest.raises(ContractError) as err:
        load_revenue_partition(source, lake, 1001, DAY)
    message = str(err.value)
    assert "location 1001" in message and "2026-11-20" in message and field in message
    assert not (settings.warehouse.lake_dir / "receipts").exists()


@pytest.mark.parametrize(("value", "said"), [
    (Decimal("1e400"), "field netAmount: 1E+400 cannot be stored as DECIMAL(18,4)"),
    (" 8.3333 ", "field netAmount: ' 8.3333 ' is not a decimal number"),
    ("8,3333", "field netAmount: '8,3333' is not a decimal number"),
    ("abc", "field netAmount: 'abc' is not a decimal number"),
    (True, "field netAmount: True is not a decimal number"),
], ids=["1e400", "spaces", "comma", "text", "bool"])
def test_a_bad_number_is_named_by_its_own_field_not_an_earlier_oddity(
        settings, lake, value, said):
    """An earlier receipt's tolerated oddity (no staff) is not what the message names."""
    rows = _sandbox_rows()
    rows[0]["staff"] = None
    target = next(r for r in rows[1:] if r["items"] and r["transactionType"] == "Abrechnen")
    target["items"][0]["netAmount"] = value
    with _mock_source(settings, [rows]) as source, pytest.raises(ContractError) as err:
        load_revenue_partition(source, lake, 1001, DAY)
    message = str(err.value)
    assert said in message and f"item of receipt {target['transactionId']}" in message
    assert "staff" not in message


def test_a_field_arrow_cannot_convert_is_named_with_its_path(settings, lake):
    rows = _sandbox_rows()
    rows[0]["staff"] = None
    target = next(r for r in rows[1:] if r["items"] and r["transactionType"] == "Abrechnen")
    target["table"]["number"] = "abc"
    with _mock_source(settings, [rows]) as source, pytest.raises(ContractError) as err:
        load_revenue_partition(source, lake, 1001, DAY)
    assert f"receipt {target['transactionId']}: field table.number: abc is not a valid " \
           "integer" in str(err.value)


def test_unknown_transaction_types_are_kept_and_counted(settings, lake):
    rows = _sandbox_rows()
    rows[5]["transactionType"] = "Zauberbuchung"
    with _mock_source(settings, [rows]) as source:
        part = load_revenue_partition(source, lake, 1001, DAY)
    assert part.unknown_types == {"Zauberbuchung": 1}
    assert "Zauberbuchung" in part.tables["receipts"]["transaction_type"].to_pylist()


def test_decimal_strings_are_accepted_and_exact(settings, lake):
    rows = _sandbox_rows()
    for r in rows:
        for i in r["items"]:
            i["netAmount"] = str(i["netAmount"])
    with _mock_source(settings, [rows]) as source:
        part = load_revenue_partition(source, lake, 1001, DAY)
    assert part.turnover_net == truth_turnover(1001, DAY)


def test_the_api_key_never_reaches_the_lake(settings, lake, sandbox_url):
    with opened(pos_resource(settings)) as source:
        load_revenue_partition(source, lake, 1001, DAY)
    files = [p for p in lake.root.rglob("*") if p.is_file()]
    assert len(files) >= 2  # a data file and a commit of the log
    for path in files:
        assert b"sandbox-key-1001" not in path.read_bytes(), path


@pytest.mark.parametrize("crash_at", ["file", "commit", None])
def test_every_crash_point_of_a_partition_write_leaves_old_or_new(
        settings, lake, monkeypatch, crash_at):
    """A write is its data file, then the Delta commit that names it: a crash at either
    (or none) leaves all four tables of the old load or all four of the new, never a
    mix, for our reader and for a Delta reader alike."""
    import contextlib

    import polars as pl

    import pipeline.lake.areafiles

    partition = {"location_id": 1001, "business_date": DAY.isoformat()}
    with opened(pos_resource(settings)) as source:
        load_revenue_partition(source, lake, 1001, DAY)
        old = {t: lake.read("revenue", t, partition) for t in REVENUE_TABLES}
        next_day = {**partition, "business_date": (DAY + timedelta(days=1)).isoformat()}
        written = load_revenue_partition(source, lake, 1001, DAY + timedelta(days=1))
        new = {t: lake.read("revenue", t, next_day) for t in REVENUE_TABLES}

        def killed(*args, **kwargs):
            raise OSError("killed")

        if crash_at == "file":
            monkeypatch.setattr(pipeline.lake.areafiles.os, "fsync", killed)
        elif crash_at == "commit":
            monkeypatch.setattr(DeltaTable, "create_write_transaction", killed)
        with contextlib.suppress(OSError):  # the next day's tables as this day's
            lake.write("revenue", written.tables, partition)
        monkeypatch.undo()
    seen = {t: lake.read("revenue", t, partition) for t in REVENUE_TABLES}
    # (the partition's key is its own: the next day's rows read as this day's)
    assert {t: v.drop_columns(["business_date"]) for t, v in seen.items()} == {
        t: v.drop_columns(["business_date"]) for t, v in (old if crash_at else new).items()}
    rows = pl.read_delta(str(lake.root / "revenue")).filter(
        pl.col("business_date") == DAY)
    assert rows.height == 1  # the day once, in one row
    for table in REVENUE_TABLES:
        ids = rows.select(pl.col(table).list.eval(pl.element().struct.field(
            "transaction_id"))).item().to_list()
        assert sorted(ids) == sorted(seen[table].column("transaction_id").to_pylist())
