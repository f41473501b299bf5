"""A build: every model into a copy of the warehouse in place, checked, then switched in.

The warehouse file holds every model as a table of its own (views only where a model
says ``view``), the macros and the comments: it answers from itself alone, wherever it
is copied, and is written in DuckDB's storage format ``storage_version`` (default 1.1),
so the DuckDB that BI tools bundle opens it.

A build brings the file the last build replaced (the standby) level with the file in
place, or copies that file where it cannot (``standby``), attaches it beside an
in-memory catalog that holds the lake's views (``pipeline.warehouse.lakeviews``) and
what is computed (staging: it is not stored), replaces there the groups of the
partitioned models whose version changed (``plan``), rebuilds the tables and views, runs
the data checks, and switches it in for the old file, which becomes the standby. A
reader that opened the old file keeps it (and a consistent state) until it closes it; a
build killed at any point leaves the old file. A file lock keeps builds one at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from pipeline.areas.revenue.macros import macro_sql
from pipeline.core import stops
from pipeline.core.reporting import ModelBuilt
from pipeline.core.settings import DEFAULT_MEMORY_LIMIT, DEFAULT_STORAGE_VERSION
from pipeline.sqlrunner.checks import WHERE_LISTED, CheckOutcome, DataCheck, run_check
from pipeline.sqlrunner.dictionary import apply_comments
from pipeline.sqlrunner.models import (
    STAGING_SCHEMA,
    Model,
    ModelError,
    build_order,
    only_in_build,
)
from pipeline.sqlrunner.project import Project
from pipeline.warehouse.compute import (
    SCRATCH,
    TARGET,
    check_key,
    compute_partitioned,
    create_model,
    groups_table,
    partitioned_checks,
    use_catalog,
    where_of,
)
from pipeline.warehouse.config_sql import config_macros, config_tables
from pipeline.warehouse.integrity import Corrupt
from pipeline.warehouse.lake_tables import LAKE_AREA_OF, LAKE_LOADS
from pipeline.warehouse.lakefiles import LakeFiles, lake_files
from pipeline.warehouse.lakeviews import create_lake_views, drop_lake_views, sql_path
from pipeline.warehouse.plan import (
    BUILT_FROM,
    FORMAT_VERSION,
    STATE_SCHEMA,
    Manifest,
    Plan,
    make_plan,
)
from pipeline.warehouse.project import parse_cache_dir, shipped
from pipeline.warehouse.shrink import LakeShrank, LakeWentBack, went_back
from pipeline.warehouse.standby import (
    catch_up,
    discard_standby,
    mark_changing,
    publish,
    recover,
    standby_path,
    usable_standby,
)
from pipeline.warehouse.state import (
    BUILD_ID,
    STATE,
    copy_state,
    lost_partitions,
    remove_killed_builds,
    state_dir,
    state_file,
)

CHECKPOINT_THRESHOLD = "1GB"
"""Write-ahead log a build's file collects before DuckDB checkpoints it (``_prepare``)."""


class BlockedBuild(ModelError):
    """A blocking data check failed: the models are wrong, so the build was not published
    and the previous warehouse stays in place."""

    def __init__(self, failed: list[CheckOutcome]):
        self.failed = failed
        listed = "; ".join(f"{o.check.model}: {o.check.name} ({o.failing_rows} rows, e.g. "
                           f"{o.sample[:1]})" for o in failed)
        super().__init__(f"blocking check(s) failed, so this build was not published and "
                         f"the previous warehouse stays: {listed}")


@dataclass
class BuildResult:
    path: Path
    row_counts: dict[str, int]
    """Rows per model (views are not counted)."""
    order: list[str]
    checks: list[CheckOutcome] = field(default_factory=list)
    rebuilt_partitions: dict[str, int] = field(default_factory=dict)
    """Per lake area: how many partitions the partitioned models were computed for."""
    corrupt: list[Corrupt] = field(default_factory=list)
    """Lake partitions whose files do not hold what their commit record says: left out,
    their previous rows kept (``integrity``)."""
    built_on: str = "new"
    """What the build changed and published: ``standby`` (the file the last build
    replaced, brought up to date in place), ``copy`` (of the file in place) or ``new``."""

    @property
    def failed_checks(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]


@contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_warehouse(lake: LakeFiles | Path, warehouse_path: Path,
                    project: Project | None = None, full: bool = False,
                    memory_limit: str = DEFAULT_MEMORY_LIMIT,
                    macros: tuple[str, ...] | None = None,
                    storage_version: str = DEFAULT_STORAGE_VERSION,
                    forget_missing: bool = False,
                    tables: tuple[str, ...] | None = None,
                    progress: Callable[[ModelBuilt], None] | None = None) -> BuildResult:
    """Build the models of ``project`` (default: the shipped one) from the lake (its files,
    or a local lake's folder), run its data checks, then switch the new file in atomically.
    ``macros`` and ``tables``: the config file's (``config_macros``, ``config_tables``;
    None: a default config's).

    The lake never shrinks in silence: a revenue partition the warehouse in place was
    built from and the lake no longer holds (a commit removed it, or versions were lost)
    fails the build (``LakeShrank``) naming it, and the warehouse in place stays; unless
    ``forget_missing`` (``pos-etl build --forget-missing``) says it is gone on purpose.

    Partitioned models are computed for the groups (a location's day) whose input
    changed since the warehouse in place was built; everything else is
    rebuilt. ``full``, a file of another format or storage version, or none, make a new
    file with every group computed. The checks of partitioned models run on the groups
    computed and carry the failures of the others over from the warehouse in place.
    """
    project = project or shipped()
    models, checks = project.models, project.checks
    macros = config_macros() if macros is None else macros
    tables = config_tables() if tables is None else tables
    order = build_order(models)
    files = lake_files(lake)
    warehouse_path = Path(warehouse_path).absolute()
    with _build_lock(warehouse_path):
        remove_killed_builds(warehouse_path)  # under the lock no other build runs
        recover(warehouse_path)
        current_state = state_file(warehouse_path)  # the warehouse readers open
        current = Manifest.read(current_state)
        wanted = {"format": FORMAT_VERSION, "storage_version": storage_version}
        build = uuid.uuid4().hex
        temp_state = state_dir(warehouse_path) / f"{build}.duckdb.building"
        incremental = not full and {k: current.meta.get(k) for k in wanted} == wanted
        # the standby brought level with the file in place (the rows of the groups that
        # changed since its own build), else a copy of that file, else a new file
        standby = usable_standby(warehouse_path, current_state) if incremental else None
        temp = standby_path(warehouse_path) if standby is not None else \
            warehouse_path.with_name(f".{warehouse_path.name}.{build}.building")
        published = False
        try:
            if standby is not None:
                mark_changing(warehouse_path)
            elif incremental:
                shutil.copyfile(warehouse_path, temp)
            if incremental:
                copy_state(current_state, temp_state)
            with duckdb.connect() as con:
                _prepare(con, memory_limit, Path(f"{temp_state}.tmp"))
                files.prepare(con)
                con.execute(f"attach '{sql_path(temp)}' as {TARGET}"
                            + ("" if incremental else f" (storage_version '{storage_version}')"))
                con.execute(f"attach '{sql_path(temp_state)}' as {STATE}")
                if standby is not None:
                    catch_up(con, TARGET, warehouse_path, standby)
                manifest, plan, stale, counts, outcomes = _build_models(
                    con, files, models, order, checks, macros, current,
                    None if incremental else warehouse_path, tables, progress)
                manifest.meta = wanted | plan.lake_versions
                manifest.write(con, STATE)
                # the build the warehouse comes from: its state file's name
                con.execute(f"create or replace macro {TARGET}.main.{BUILD_ID}() as '{build}'")
                # (a models folder without BUILT_FROM cannot say what it was built from)
                lost = lost_partitions(con, current_state, STATE) \
                    if BUILT_FROM in models else []
                if lost and not forget_missing:
                    raise LakeShrank(lost)
                behind = went_back(current.meta, plan.lake_versions)
                if behind and not forget_missing:
                    raise LakeWentBack(behind)
                apply_comments(con, models, project.dictionary)
                for check in checks:
                    stops.check()
                    if check not in outcomes:
                        outcomes[check] = run_check(con, check, project.sources.keys)
                # what only this build could check (models it computed, not stored)
                per_group = partitioned_checks(models, checks)  # in the manifest already
                manifest.record(con, STATE, {
                    (check_key(c), ""): outcomes[c].failing_rows for c in checks
                    if c not in per_group and not outcomes[c].passed
                    and only_in_build(c.sql, c.name, models, parse_cache_dir())})
                blocked = [outcomes[c] for c in checks if c.blocking and not outcomes[c].passed]
                if blocked:  # nothing downstream may read wrong figures
                    raise BlockedBuild(blocked)
                con.execute(f"checkpoint {TARGET}")
                con.execute(f"checkpoint {STATE}")
                use_catalog(con, SCRATCH)
                con.execute(f"detach {TARGET}")
                con.execute(f"detach {STATE}")
            stops.check()  # the last moment a stop leaves the old warehouse
            publish(temp, temp_state, warehouse_path, build)
            published = True
        finally:
            if standby is not None and not published:
                discard_standby(warehouse_path)  # changed, not published: untrusted
            for path in ((temp_state,) if standby is not None else (temp, temp_state)):
                path.unlink(missing_ok=True)
                Path(f"{path}.wal").unlink(missing_ok=True)
            shutil.rmtree(f"{temp_state}.tmp", ignore_errors=True)
        if current.meta.get("format") == FORMAT_VERSION:
            # Parquet parts of a warehouse before format 2 (its views read them): gone
            # once the file they belonged to was replaced twice.
            shutil.rmtree(warehouse_path.with_name(f"{warehouse_path.stem}_parts"),
                          ignore_errors=True)
    return BuildResult(warehouse_path, counts, order, [outcomes[c] for c in checks],
                       {area: sum(map(len, groups.values())) for area, groups in stale.items()},
                       plan.corrupt,
                       "standby" if standby is not None else "copy" if incremental else "new")


def _prepare(con: duckdb.DuckDBPyConnection, memory_limit: str, spill: Path) -> None:
    """A build connection's settings."""
    # Only named tables are read: never a Python variable of the same name.
    con.execute("set python_enable_replacements = false")
    con.execute("set preserve_insertion_order = false")
    con.execute(f"set memory_limit = '{memory_limit}'")
    con.execute(f"set temp_directory = '{sql_path(spill)}'")
    # An insert smaller than a row group goes through the write-ahead log, and each
    # automatic checkpoint (by default at 16 MB of log) rewrites the metadata of every
    # table: with a chain's history that grows with the file. A build checkpoints once,
    # before it publishes; the log of a killed build goes with its file.
    con.execute(f"set checkpoint_threshold = '{CHECKPOINT_THRESHOLD}'")
    # Text is compressed with FSST where it pays (DuckDB's default). It was disabled while
    # staging was stored (choosing its symbol tables was a fifth of writing the rows
    # twice); with staging computed, not stored, it costs about 1 % of a full build and
    # makes the file 0.84x (20 locations x 180 days: 491.6 MB vs 588.0, 2026-11-26).


def _macros(con: duckdb.DuckDBPyConnection, catalog: str, macros: tuple[str, ...]) -> None:
    """The macros in ``catalog`` (now the one in use), and the staging schema where the
    build computes the models it does not store (``SCRATCH``)."""
    con.execute(f"create schema if not exists {SCRATCH}.{STAGING_SCHEMA}")
    use_catalog(con, catalog)
    for sql in (*macro_sql(), *macros):
        con.execute(sql)


def _relations(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, str]:
    """``schema.name`` -> ``table`` or ``view``, of the models' schemas in ``catalog``."""
    rows = con.execute(f"""
        select schema_name || '.' || table_name, 'table' from duckdb_tables()
        where database_name = '{catalog}' and schema_name in ('main', '{STAGING_SCHEMA}')
        union all
        select schema_name || '.' || view_name, 'view' from duckdb_views()
        where database_name = '{catalog}' and schema_name in ('main', '{STAGING_SCHEMA}')
          and not internal""").fetchall()
    return dict(rows)


def _build_models(con: duckdb.DuckDBPyConnection, files: LakeFiles, models: dict[str, Model],
                  order: list[str], checks: tuple[DataCheck, ...], macros: tuple[str, ...],
                  previous: Manifest, anew_from: Path | None, tables: tuple[str, ...] = (),
                  progress: Callable[[ModelBuilt], None] | None = None):
    """Every model into the catalog ``TARGET``: the partitioned ones first, for the groups
    whose version changed, and their checks there; then the tables and views. Returns
    the manifest, the plan, the groups computed per area with their partitions, the row
    counts and the outcomes of the partitioned checks. ``previous`` is the manifest of the
    warehouse in place; ``anew_from`` its path when the build makes a new file (its rows
    of corrupt partitions are copied, and every lake partition is verified again). The
    bookkeeping goes into the catalog ``STATE``."""
    _macros(con, TARGET, (*macros, *tables))  # tables: not in the versions (make_plan)
    _macros(con, SCRATCH, (*macros, *tables))
    state = f"{STATE}.{STATE_SCHEMA}"
    con.execute(f"create schema if not exists {state}")
    plan = make_plan(con, files, models, order, macros, state,
                     verify_all=anew_from is not None, target=TARGET)
    existing = _relations(con, TARGET)
    for qualified, kind in existing.items():  # a model no longer defined, or not stored
        name = qualified.split(".")[1]
        if name not in models or not models[name].stored:
            con.execute(f"drop {kind} {TARGET}.{qualified}")
    con.execute(f"drop schema if exists {TARGET}.{STAGING_SCHEMA}")
    held = None if anew_from is not None else state  # where the file's versions are
    stale = plan.stale(con, held)
    checked = partitioned_checks(models, checks)
    found = compute_partitioned(con, models, plan, checked, stale, held, existing)
    outcomes = {}
    manifest = Manifest()
    if plan.kept:  # a corrupt partition's rows stay as they were
        if anew_from is not None:
            _copy_kept_rows(con, anew_from, models, plan)
        plan.keep_versions(con)
    for check, area in checked.items():
        new, sample = found[check]
        carried = {group: n for (key, group), n in previous.check_failures.items()
                   if key == check_key(check) and group not in stale[area]
                   and (group in plan.members[area] or group in plan.kept.get(area, ()))}
        failures = carried | new
        manifest.check_failures.update(((check_key(check), group), n)
                                       for group, n in failures.items())
        outcomes[check] = CheckOutcome(check, sum(failures.values()), sample, tuple(
            where_of(group) for group in sorted(failures)[:WHERE_LISTED]))
    use_catalog(con, TARGET)
    counts = {name: con.execute(f"select count(*) from {models[name].qualified}").fetchone()[0]
              for name in plan.partitioned if models[name].stored}
    done = iter(range(1, len(order) + 1))  # the models in the order they are done

    def say(name: str, rows: int | None, seconds: float | None = None,
            partitions: int | None = None) -> None:
        if progress is not None:
            progress(ModelBuilt(name, next(done), len(order), models[name].built_as,
                                rows, seconds, partitions))

    for name in plan.partitioned:
        say(name, counts.get(name),
            partitions=sum(map(len, stale.get(models[name].area, {}).values())))
    tabled = [model for model in models.values() if model.materialized != "partitioned"]
    create_lake_views(con, plan.committed, plan.superseded, partitions={
        LAKE_AREA_OF[table]: None for model in tabled for table in model.source_deps
        if table != LAKE_LOADS}, loads=None if any(
            LAKE_LOADS in model.source_deps for model in tabled) else ())
    for name in order:
        model = models[name]
        if model.materialized == "partitioned":
            continue
        stops.check()
        started = time.monotonic()
        kind = existing.get(model.qualified) if model.stored else None
        if kind and kind != model.materialized:
            con.execute(f"drop {kind} {model.qualified}")
        create_model(con, models, name, f"or replace {model.materialized}")
        if model.materialized == "table" and model.stored:
            counts[name] = con.execute(f"select count(*) from {model.qualified}").fetchone()[0]
        say(name, counts.get(name), time.monotonic() - started)
    drop_lake_views(con)
    return manifest, plan, stale, counts, outcomes


def _copy_kept_rows(con: duckdb.DuckDBPyConnection, old: Path, models: dict[str, Model],
                    plan: Plan) -> None:
    """Into a new file, the rows of the groups ``plan`` keeps, from the file in place (if it
    has them in the same shape: a file of another format may not)."""
    if not old.exists():
        return
    con.execute(f"attach '{sql_path(old)}' as _previous (read_only)")
    try:
        for name in plan.partitioned:
            groups = sorted(plan.kept.get(models[name].area, ()))
            if groups and models[name].stored:
                where = plan.groupings[models[name].area].predicate(
                    con, groups, groups_table(models[name].area))
                with contextlib.suppress(duckdb.Error):
                    con.execute(f"insert into {TARGET}.{models[name].qualified} by name "
                                f"select * from _previous.{models[name].qualified} "
                                f"where {where}")
    finally:
        con.execute("detach _previous")
