"""Shared fixtures: the sandbox over real HTTP, settings pointing at it, sandbox truth."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path

import pytest

from pipeline.core.settings import LocationSettings, Settings, SourceSettings, WarehouseSettings
from pipeline.lake.store import Lake
from pipeline.orchestration.configs import sandbox_settings
from pipeline.pos_api.source import PosSource
from pos_sandbox import world
from pos_sandbox.receipts import SandboxData, receipts_on

DATA = SandboxData()

RAM_TEMP = Path("/dev/shm")
RAM_TEMP_FREE = 8 << 30
"""A run's temporary folders (lakes, warehouses, Dagster homes: some 4 GB for the whole
suite) go to ``RAM_TEMP`` when it has this much free, unless ``--basetemp`` is given
(docs/testing.md)."""


@pytest.hookimpl(tryfirst=True)  # before pytest's own tmp_path factory reads the option
def pytest_configure(config: pytest.Config) -> None:
    """The run's temporary folders in memory (``RAM_TEMP``): the suite writes and fsyncs
    some 4 GB of lakes, warehouses and Dagster storage, which costs it an eighth of its
    time on a disk (docs/testing.md). The xdist workers take their folders under the controller's;
    the folder is removed when the run ends (give ``--basetemp`` to keep one)."""
    if config.option.basetemp is not None or hasattr(config, "workerinput"):
        return
    try:
        roomy = RAM_TEMP.is_dir() and shutil.disk_usage(RAM_TEMP).free >= RAM_TEMP_FREE
    except OSError:
        roomy = False
    if roomy:
        _remove_left_behind()
        config.option.basetemp = tempfile.mkdtemp(prefix=f"pos-etl-tests-{os.getpid()}-",
                                                  dir=RAM_TEMP)
        config.stash[_RAM_BASETEMP] = Path(config.option.basetemp)


def _remove_left_behind() -> None:
    """The folders of runs whose process is gone (killed: no ``pytest_unconfigure``)."""
    import psutil

    for folder in RAM_TEMP.glob("pos-etl-tests-*-*"):
        pid = folder.name.split("-")[3]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


_RAM_BASETEMP = pytest.StashKey[Path]()


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_RAM_BASETEMP, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def truth_turnover(location_id: int, day: date, data: SandboxData = DATA,
                   starts: time = time(0)) -> Decimal:
    """The spec's turnover rule (2.2) applied to the sandbox's own receipts, independently
    of the pipeline: the figure the warehouse must match to the cent (for a business day
    that starts at ``starts``)."""
    return sum((item.net_amount * item.quantity
                for r in receipts_on(location_id, day, data, starts)
                if r.payment_group.name == "Umsatzwirksam"
                and r.transaction_type in ("Abrechnen", "RechnungZurückholen")
                for item in r.items), Decimal(0))


def make_settings(base_url: str, data_dir: Path, **source) -> Settings:
    """Settings for the sandbox's locations at ``base_url``; keys come from POS_TEST_KEY_<id>;
    the hotel's tourist tax collected for others, as the sandbox's own configs have it."""
    return Settings(
        source=SourceSettings(base_url=base_url, backoff_initial_seconds=0.01,
                              backoff_max_seconds=0.05, **source),
        warehouse=WarehouseSettings(data_dir=data_dir),
        accounting=sandbox_settings().accounting,
        locations=[LocationSettings(id=loc.id, short_code=loc.short_code,
                                    timezone=loc.timezone, api_key_env=f"POS_TEST_KEY_{loc.id}")
                   for loc in world.LOCATIONS],
    )


CASH_SHORTS = "cash_count_matches_the_book"
"""The warn check the sandbox fails on purpose: a short count of the drawer on one service
day in nine (``pos_sandbox.receipts.cash_short``; tests/integration/test_cash_book.py holds
the check to exactly those days)."""


def unexpected(checks: list) -> list:
    """Failed checks (``CheckOutcome``) but the sandbox's deliberate short counts."""
    return [c for c in checks if c.check.name != CASH_SHORTS]


def fingerprints(path: Path, names: list[str] | None = None) -> dict[str, tuple[int, int]]:
    """Each of ``names`` (qualified; default: every stored model) in the warehouse file at
    ``path``: its row count and the sum of its rows' hashes, computed by DuckDB in one
    connection. Equal for the same rows in any order; different rows differ but for a
    64-bit hash collision. (Fetching every model's rows into Python to sort and compare
    them took a tenth of a build module's time.)"""
    import duckdb

    from pipeline.warehouse.project import discover_models

    if names is None:
        names = [m.qualified for m in discover_models().values() if m.stored]
    with duckdb.connect(str(path), read_only=True) as con:
        return {name: con.execute(f"select count(*), coalesce(sum(hash(t)), 0) "
                                  f"from {name} t").fetchone() for name in names}


def write_config(folder: Path, base_url: str, accounts: bool = True) -> Path:
    """``folder/pos.toml``: location 1001 at ``base_url``, data in ``folder/data``, the key
    in ``POS_TEST_KEY_1001``; with ``accounts``, the accounts the sandbox's own configs
    map (its staff meals' payment group, its online payments)."""
    config = folder / "pos.toml"
    mapped = "" if not accounts else (
        "[accounting.accounts]\npayment_accounts = { "
        + ", ".join(f'"{k}" = "{v}"' for k, v in world.CONFIG_PAYMENT_ACCOUNTS.items())
        + " }\nnon_revenue_accounts = { "
        + ", ".join(f'"{k}" = "{v}"' for k, v in world.CONFIG_GROUP_ACCOUNTS.items()) + " }\n")
    config.write_text(f'[source]\nbase_url = "{base_url}"\n[warehouse]\ndata_dir = "data"\n'
                      + mapped + '[[locations]]\nid = 1001\nshort_code = "VIE01"\n'
                      'api_key_env = "POS_TEST_KEY_1001"\n')
    return config


def loaded_warehouse(sandbox_url: str, data_dir: Path, start: date, end: date,
                     locations: list[int] | None = None) -> Settings:
    """Settings of a warehouse loaded from the sandbox at ``sandbox_url`` (vouchers too)
    over ``start``..``end``, as ``pos-etl load`` loads it (``load_directly``): what a
    module's tests query."""
    settings = make_settings(sandbox_url, data_dir, voucher_url=sandbox_url)
    load_directly(settings, start, end, locations)
    return settings


def load_directly(settings: Settings, start: date, end: date,
                  locations: list[int] | None = None, catalog: bool = True,
                  build: bool = True) -> None:
    """What ``pos-etl load`` does to the data folder, by the load's own steps (revenue
    days, the snapshots) and the warehouse resource's build, without Dagster's runs and
    their events (some 3 s a load and its build, even in memory): for the modules whose
    subject is what the lake and the warehouse hold. Dagster's runs, their events and the
    CLI's report are the subject of other modules (``test_dagster``, ``test_operations``,
    the CLI tests). Keys are the sandbox's own; nothing may fail. ``catalog=False``: the
    revenue alone (``--no-catalog``); ``build=False``: no build (``--no-models``)."""
    from datetime import timedelta

    from pipeline.areas import SNAPSHOTS
    from pipeline.extract.snapshots import snapshot_date
    from pipeline.load.steps import load_revenue_days, take_snapshots
    from pipeline.orchestration.resources import build_resources
    from pipeline.pos_api.source import Endpoint
    from pipeline.sources import SOURCES

    configured = [loc.id for loc in settings.locations]
    ids = locations or configured
    days = [start + timedelta(days=n) for n in range((end - start).days + 1)]
    resources = build_resources(settings)
    lake = resources["lake"]
    lake.claim(ids)
    keys = {loc.id: world.api_key(loc.id) for loc in settings.locations}
    first = settings.locations[0]
    tenant = {s.name: Endpoint(s.address(settings), keys[first.id], first.api_key_env)
              for s in SOURCES if not s.per_location and s.address(settings)}
    with PosSource(settings, settings.source.base_url, keys, key_hints=False,
                   tenant=tenant) as source:
        loaded = list(load_revenue_days(source, lake, days, ids, configured))
        failed = [p.failure for day in loaded for p in day.failed]
        assert not failed, failed
        for area in SNAPSHOTS:
            if catalog and area.wired(settings):
                taken = take_snapshots(area.extract, source, lake,
                                       ids if area.per_location else [None],
                                       snapshot_date(settings), area.name)
                assert not [o.failure for o in taken if o.failure], area.name
    if build:
        resources["warehouse"].build()


def build_directly(settings: Settings):
    """The warehouse resource's build of ``settings``'s lake (its models, checks and the
    switch), without a Dagster run and its events (some 3 s a build of every model, even in
    memory): for a test whose subject is what a config makes of the warehouse. A blocking
    check raises ``BlockedBuild``."""
    from pipeline.orchestration.resources import build_resources

    return build_resources(settings)["warehouse"].build()


def run_load_in_memory(settings: Settings, *args, **kwargs):
    """``run_load``, its runs recorded in an instance in memory (``in_memory_instance``)."""
    from pipeline.orchestration.loader import run_load

    with in_memory_instance() as instance:
        return run_load(settings, *args, instance=instance, **kwargs)


def run_build_in_memory(settings: Settings, **kwargs):
    """``run_build``, its run recorded in an instance in memory (``in_memory_instance``)."""
    from pipeline.orchestration.loader import run_build

    with in_memory_instance() as instance:
        return run_build(settings, instance=instance, **kwargs)


def in_memory_instance():
    """A Dagster instance that keeps its runs and events in memory (Dagster's own for tests,
    ``DagsterInstance.ephemeral``), for a load whose lake and warehouse a test reads, not
    its runs: a load and its build (two runs, some 600 events) take 7-8 s with a new SQLite
    instance, under 3 s with this one.
    What the instance in the data dir records (``status``, the UI, dead runs) is tested
    through the CLI and ``test_dagster``."""
    import dagster as dg

    return dg.DagsterInstance.ephemeral()


@contextmanager
def cli_instance_in_memory(*test_modules) -> Iterator:
    """Every ``pos-etl`` command run in this process (``pipeline.cli.main``) and every
    ``open_instance`` of the ``test_modules`` get, for as long as the context lasts, the
    Dagster instance of their home (``dagster_home``: one per data folder, as on disk)
    kept in memory (``in_memory_instance``): runs, events, checks and pools behave as on
    disk, without Dagster's SQLite commit per event (some 10 ms each here, about half of
    what a CLI test costs; ``benchmarks/storage.py``). For modules whose subject is the
    commands' output, lake and warehouse. The instance on disk (its home and files, a
    full disk, dead runs, keys in its files, PostgreSQL) is tested where it is the
    subject: ``test_dagster``, ``test_dead_runs``, ``test_full_disk``, ``test_hardening``,
    ``test_key_echo``, ``test_postgres`` and every test that runs ``pos-etl`` in a
    process of its own. Yields the instances by home."""
    import pipeline.orchestration.instance
    import pipeline.orchestration.loader
    from pipeline.orchestration.instance import dagster_home

    instances: dict[Path, object] = {}

    @contextmanager
    def of_home(settings):
        home = dagster_home(settings).resolve()
        if home not in instances:
            instances[home] = in_memory_instance()
        yield instances[home]  # kept open for the next command of this home

    patch = pytest.MonkeyPatch()
    for module in (pipeline.orchestration.instance, pipeline.orchestration.loader,
                   *test_modules):
        if hasattr(module, "open_instance"):
            patch.setattr(module, "open_instance", of_home)
    try:
        yield instances
    finally:
        patch.undo()
        for instance in instances.values():
            instance.dispose()


@pytest.fixture(scope="module")
def dagster_in_memory(request):
    """The module's commands on in-memory Dagster instances (``cli_instance_in_memory``):
    a module takes it with ``pytestmark = pytest.mark.usefixtures("dagster_in_memory")``,
    so it is in place before the module's own fixtures run their commands."""
    with cli_instance_in_memory(request.module) as instances:
        yield instances


@pytest.fixture
def sandbox_keys(monkeypatch):
    """Put each sandbox location's key into its environment variable."""
    for loc in world.LOCATIONS:
        monkeypatch.setenv(f"POS_TEST_KEY_{loc.id}", loc.api_key)


@pytest.fixture
def settings(sandbox_url, tmp_path, sandbox_keys) -> Settings:
    return make_settings(sandbox_url, tmp_path / "data")


@pytest.fixture
def lake(settings) -> Lake:
    return Lake(settings.warehouse.lake_dir)


def source_with(settings: Settings, **options) -> PosSource:
    """A source on the POS of ``settings`` with the keys of the environment, as the ``pos``
    resource opens it, but through ``options`` (a test's ``transport``, ``sleep``)."""
    keys = {loc.id: os.environ[loc.api_key_env] for loc in settings.locations}
    return PosSource(settings, settings.source.base_url, keys, **options)


def moved_receipt(location_id: int, day: date, to: date, data: SandboxData = DATA,
                  paid_in_cash: bool = False):
    """A revenue-effective settlement of ``day`` (three lines or more; paid in cash only,
    if asked) and the sandbox's data once the POS corrected it: moved to noon of ``to``,
    its last line gone (so its last payment shrinks)."""
    from dataclasses import replace

    from pos_sandbox.receipts import Correction

    moved = next(r for r in receipts_on(location_id, day, data)
                 if r.transaction_type == "Abrechnen" and len(r.items) >= 3
                 and r.payment_group.name == "Umsatzwirksam"
                 and (not paid_in_cash
                      or {p.payment_type.name for p in r.payments} == {"Bar"}))
    return moved, replace(data, corrections=(Correction(
        location_id, moved.transaction_id, datetime.combine(to, time(12, 0, 7))),))
