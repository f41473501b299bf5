"""Every server the spec allows, loaded exactly: each sandbox profile over real HTTP through
the load's steps into the lake, each partition's receipts and turnover compared with the
sandbox's own truth to the cent; the harshest profile, a receipt voided after its load
and the fields the spec does not name also through the warehouse (and a Dagster job)."""

from datetime import date
from decimal import Decimal

import duckdb
import pytest

from pipeline.core.reporting import Reporter
from pipeline.lake.store import Lake
from pipeline.load.steps import load_revenue_days
from pipeline.pos_api.source import PosSource
from pipeline.warehouse import build_warehouse
from pos_sandbox import world
from pos_sandbox.app import Faults, SandboxConfig
from pos_sandbox.profiles import ServerProfile
from pos_sandbox.receipts import SandboxData, receipts_on
from pos_sandbox.server import running_sandbox
from tests.conftest import make_settings, run_load_in_memory, truth_turnover

DAYS = [date(2026, 11, 19), date(2026, 11, 20)]
LOCATIONS = [1001, 1003]  # a restaurant, and one answering as an older query configuration
PAGE = 40  # the limit the pipeline asks for: several pages a day, so paging matters

PROFILES = {
    "strict": SandboxConfig(),
    "limit capped at 7": SandboxConfig(server=ServerProfile(limit_cap=7)),
    "limit ignored": SandboxConfig(server=ServerProfile(ignore_limit=True)),
    "ordered by transactionId": SandboxConfig(server=ServerProfile(order_by_id=True,
                                                                   limit_cap=25)),
    "after/before inclusive": SandboxConfig(server=ServerProfile(inclusive_bounds=True)),
    "cursor row repeated": SandboxConfig(server=ServerProfile(repeat_cursor_row=True,
                                                              limit_cap=9)),
    "same second on page boundaries": SandboxConfig(data=SandboxData(same_second=True),
                                                    server=ServerProfile(limit_cap=7)),
    "gzip": SandboxConfig(server=ServerProfile(content_encoding="gzip")),
    "deflate": SandboxConfig(server=ServerProfile(content_encoding="deflate")),
    "429 Retry-After seconds": SandboxConfig(faults=Faults(rate_429=0.3, retry_after_seconds=0)),
    "429 Retry-After HTTP date": SandboxConfig(faults=Faults(
        rate_429=0.3, retry_after_seconds=0, retry_after_form="http-date")),
    "429 without Retry-After": SandboxConfig(faults=Faults(rate_429=0.3,
                                                           retry_after_form="none")),
    "bursts of 503": SandboxConfig(faults=Faults(burst_every=10, burst_length=3)),
    "unknown fields": SandboxConfig(data=SandboxData(extra_fields=True)),
    "optional fields left out": SandboxConfig(data=SandboxData(drop_optional=True)),
    "all at once": SandboxConfig(
        data=SandboxData(same_second=True, extra_fields=True),
        server=ServerProfile(limit_cap=11, order_by_id=True, repeat_cursor_row=True,
                             inclusive_bounds=True, content_encoding="gzip"),
        faults=Faults(rate_429=0.1, retry_after_seconds=0, burst_every=7, burst_length=2)),
}


def load(config: SandboxConfig, data_dir):
    """The days loaded from a sandbox of ``config`` over real HTTP by the load's own
    steps (extraction, lake commits): what a ``pos-etl load`` does without Dagster's
    bookkeeping (which other modules test) and the build. The partitions' outcomes."""
    with running_sandbox(config) as url:
        # up to 20 attempts: a request may meet several bursts and 429s in a row (the
        # chance that one outlasts 20 is below 1e-8 in the harshest profile)
        settings = make_settings(url, data_dir, page_size=PAGE, max_attempts=20)
        keys = {loc.id: loc.api_key for loc in world.LOCATIONS}
        with PosSource(settings, url, keys, key_hints=False) as source:
            days = list(load_revenue_days(source, Lake(settings.warehouse.lake_dir), DAYS,
                                          LOCATIONS))
    assert all(day.complete for day in days), [p.failure for d in days for p in d.failed]
    return settings, [p for day in days for p in day.partitions]


def built(settings):
    build_warehouse(settings.warehouse.lake_dir, settings.warehouse.warehouse_path)
    return settings


def load_in_dagster(config: SandboxConfig, data_dir):
    """The same, as ``pos-etl load`` runs it: a Dagster job (in memory) and its report."""
    with running_sandbox(config) as url:
        settings = make_settings(url, data_dir, page_size=PAGE, max_attempts=20)
        report = run_load_in_memory(settings, DAYS[0], DAYS[-1], LOCATIONS, catalog=False,
                                    progress=Reporter())
    return settings, report


def warehouse(settings) -> tuple[dict, dict]:
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        turnover = {(loc, day): value for loc, day, value in con.execute(
            "select location_id, business_date, turnover_net from fct_turnover_daily").fetchall()}
        receipts = {(loc, day): n for loc, day, n in con.execute(
            "select location_id, business_date, count(*) from fct_receipts "
            "group by all").fetchall()}
    return turnover, receipts


def assert_truth_in_lake(settings, data: SandboxData) -> None:
    """Each partition's commit record (what the build's integrity check holds the
    warehouse to) and its receipts table against the sandbox's truth."""
    lake = Lake(settings.warehouse.lake_dir)
    for loc in LOCATIONS:
        for day in DAYS:
            partition = {"location_id": loc, "business_date": day.isoformat()}
            record = lake.committed("revenue", partition)
            assert Decimal(record.metadata["turnover_net"]) == truth_turnover(loc, day, data)
            receipts = lake.read("revenue", "receipts", partition).num_rows
            assert receipts == int(record.metadata["receipts"]) == len(
                receipts_on(loc, day, data)), (loc, day)


def assert_truth(settings, data: SandboxData) -> None:
    turnover, receipts = warehouse(settings)
    for loc in LOCATIONS:
        for day in DAYS:
            assert turnover[(loc, day)] == truth_turnover(loc, day, data), (loc, day)
            assert receipts[(loc, day)] == len(receipts_on(loc, day, data)), (loc, day)


@pytest.mark.parametrize("name", PROFILES)
def test_every_server_profile_loads_exactly(name, tmp_path):
    config = PROFILES[name]
    settings, partitions = load(config, tmp_path / "data")
    assert_truth_in_lake(settings, config.data)
    if name == "all at once":
        assert_truth(built(settings), config.data)
    if config.data.extra_fields:
        assert sum(p.unknown_fields["receipts.loyaltyPoints"] for p in partitions) == sum(
            p.receipts for p in partitions)


def test_a_receipt_voided_at_the_source_after_it_was_loaded_leaves_the_warehouse(tmp_path):
    settings, _ = load(SandboxConfig(), tmp_path / "data")
    voided = SandboxData(voided_per_day=3)
    load(SandboxConfig(data=voided), tmp_path / "data")
    built(settings)
    assert_truth(settings, voided)
    assert truth_turnover(1001, DAYS[1], voided) < truth_turnover(1001, DAYS[1])


def test_unknown_fields_are_kept_in_the_lake_and_left_out_fields_are_null(
        tmp_path, sandbox_keys):
    config = SandboxConfig(data=SandboxData(extra_fields=True, drop_optional=True))
    settings, report = load_in_dagster(config, tmp_path / "data")
    assert report.ok, report.summary()
    assert report.unknown_fields["receipts.loyaltyPoints"] == report.receipts
    assert "receipts.loyaltyPoints" in report.summary()
    assert "receipt_items.kitchenNote" in report.summary()
    with duckdb.connect(str(settings.warehouse.warehouse_path), read_only=True) as con:
        extra, customers = con.execute(
            "select any_value(extra_fields), count(customer_id) "
            "from fct_receipts").fetchone()
        kitchen, external = con.execute(
            "select any_value(extra_fields), count(external_id) "
            "from fct_receipt_items").fetchone()
    assert '"loyaltyPoints"' in extra and customers == 0
    assert '"station"' in kitchen and external == 0


PLAIN = {"strict", "limit capped at 7", "limit ignored", "ordered by transactionId",
         "after/before inclusive", "cursor row repeated", "same second on page boundaries",
         "gzip", "optional fields left out"}
"""The profiles whose answers the extraction reads column-wise; the others' (fields the
spec does not name) it reads receipt by receipt."""


@pytest.mark.parametrize("name", [*sorted(PLAIN), "unknown fields", "all at once"])
def test_both_readings_of_every_profiles_answers_make_the_same_partitions(
        name, tmp_path, monkeypatch):
    """What the load flattens, read column-wise and receipt by receipt from the same
    answers: the same four tables and the same counts for every partition."""
    from pipeline.areas.revenue import columnar
    from pipeline.areas.revenue import extract as revenue

    taken, flatten = [], revenue.flatten_receipts

    def both(pages, **where):
        pages = list(pages)
        rows = flatten([p.rows() for p in pages], **where)
        making = columnar.flatten_many

        def spy(*args, **kwargs):
            made = making(*args, **kwargs)
            taken.extend(m for m in made if isinstance(m, columnar.Flattened))
            return made

        with monkeypatch.context() as m:
            m.setattr(columnar, "flatten_many", spy)
            by_columns = flatten(pages, **where)
        for part in (rows, by_columns):
            part.tables = {n: t.to_pylist() for n, t in part.tables.items()}
        assert vars(by_columns) == vars(rows), where
        return flatten(pages, **where)

    monkeypatch.setattr(revenue, "flatten_receipts", both)
    config = PROFILES[name]
    with running_sandbox(config) as url:
        settings = make_settings(url, tmp_path, page_size=PAGE, max_attempts=20)
        keys = {loc.id: loc.api_key for loc in world.LOCATIONS}
        with PosSource(settings, url, keys, key_hints=False) as source:
            parts = [revenue.extract_revenue_partition(source, loc, day)
                     for loc in LOCATIONS for day in DAYS]
    assert all(p.receipts_seen > p.row_counts["receipts"] > 0 for p in parts)
    assert len(taken) == (len(parts) if name in PLAIN else 0)
