"""What a build must compute: the version of every model's rows of every group.

Partitioned models are kept per group of lake partitions (``Grouping``: a location's
business date). A group's version is a hash of everything its rows derive
from: its partitions' committed loads, the receipts other partitions took over from them,
and the SQL (as parsed: comments and layout do not count) of the model, of the models
it reads and of the macros. A build computes the
groups whose version changed and keeps the others, so a night costs the days it
loads, not the history.

The manifest (every model's groups and their versions, the failures of the checks per
group, the file's format), the receipts' keys and the loads verified are the build's
bookkeeping: not the analyst's, so they live in a file of their own beside the warehouse
(``<name>.state/<build id>.duckdb``, schema ``_state``), named by the build that wrote it.
The warehouse says which build it is (the macro ``pos_etl_build_id()``); a build writes
its state file first and switches the warehouse in after it, so the warehouse in place
always finds its own state (a warehouse without one is built anew).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.areas.revenue.macros import macro_sql
from pipeline.lake.store import parse_partition
from pipeline.sqlrunner.models import Model, canonical_sql
from pipeline.warehouse.integrity import Corrupt, verify_lake
from pipeline.warehouse.lakefiles import LakeFiles
from pipeline.warehouse.lakeviews import (
    Committed,
    arrow_insert,
    committed_loads,
    keys_predicate,
    superseded_receipts,
)
from pipeline.warehouse.project import parse_cache_dir

STATE_SCHEMA = "_state"
"""The schema of the build's bookkeeping in its state file: the manifest, every receipt's
key, the loads verified."""
FORMAT_VERSION = "7"
"""Versions change with this (a change of how models are stored or the lake is read):
7, a version per group and a hash per model kept apart (``PARTS``, ``MODELS``); 6,
staging computed by each build and not stored; 5, the lake as one Delta table per area;
4, every model a table of the file itself, a group per lake partition, the bookkeeping in
a state file beside."""


def digest(*values: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, values)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Grouping:
    """A group is one lake partition (a location's business date): what a build computes,
    keeps or replaces. ``keys`` are the area's partition keys; the last is a date.

    Groups are rows of the file's own tables, so a group per day costs nothing more than
    a group per month did as Parquet files, and a night computes its days only, however
    long the history.
    """

    keys: tuple[str, ...]

    def group(self, partition: str) -> str:
        """``location_id=1001/business_date=2026-11-20``: its own group."""
        return partition

    def group_sql(self) -> str:
        """The group as SQL over a model's columns."""
        return " || '/' || ".join(f"'{k}=' || cast({k} as varchar)" for k in self.keys)

    def predicate(self, con: duckdb.DuckDBPyConnection, groups: list[str], name: str) -> str:
        """SQL true for the rows of ``groups``, by way of the temporary table ``name``
        (``keys_predicate``)."""
        return keys_predicate(con, self.keys, groups, name)


FAILURES_SCHEMA = pa.schema([("check_name", pa.string()), ("part_group", pa.string()),
                             ("failing_rows", pa.int64())])
META_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string())])
VERSIONS_SCHEMA = pa.schema([("area", pa.string()), ("part_group", pa.string()),
                             ("version", pa.string())])
PARTS = "part_versions"
"""The table (in ``STATE_SCHEMA``) of every group of the partitioned models' areas, with
the version of its input the file holds the rows of (``area, part_group, version``)."""
MODELS = "model_hashes"
"""The table (in ``STATE_SCHEMA``) of the stored partitioned models, with their area and
the hash of the SQL their rows were computed by (``model, area, hash``). A model's part
is current when both its hash and its group's version are: a row per group and one per
model, not one per model and group (a chain's three years: 219,000 groups, 3.3 million
model parts)."""
NEXT_PARTS, NEXT_MODELS = f"next_{PARTS}", f"next_{MODELS}"
"""The versions and hashes a build computes the groups for (in ``STATE_SCHEMA`` of the
file being built, until they replace ``PARTS`` and ``MODELS``)."""
KEPT = ""
"""The version of a group whose rows a build kept as they were (its partition is
corrupt): never current, so the first build that can read the partition computes it."""

BUILT_FROM = "fct_turnover_daily"
"""The partitioned model whose groups say which revenue partitions a warehouse was built
from: one group per location and business date, days without receipts too."""


def built_from(con: duckdb.DuckDBPyConnection, catalog: str | None = None
               ) -> dict[int, set[date]]:
    """Per location, the business dates whose revenue partition a warehouse was built
    from, by its state file (the connection's, or the attached ``catalog``)."""
    state = f"{catalog}.{STATE_SCHEMA}" if catalog else STATE_SCHEMA
    days: dict[int, set[date]] = {}
    for (group,) in con.execute(built_from_sql(state), [BUILT_FROM]).fetchall():
        location, day = location_day(group)
        days.setdefault(location, set()).add(day)
    return days


def location_day(group: str) -> tuple[int, date]:
    """A revenue group (``location_id=1001/business_date=2026-11-20``) as (location, date)."""
    keys = parse_partition(group)
    return int(keys["location_id"]), date.fromisoformat(keys["business_date"])


def built_from_sql(state: str) -> str:
    """The groups of the model named by the one parameter (``BUILT_FROM``), in the state
    schema ``state``."""
    return (f"select part_group from {state}.{PARTS} where area = "
            f"(select area from {state}.{MODELS} where model = ?)")


@dataclass
class Manifest:
    """What a warehouse file records of its build besides the versions of its groups
    (``PARTS``, read in SQL only)."""

    check_failures: dict[tuple[str, str], int] = field(default_factory=dict)
    """(check, group) -> failing rows, of the checks that run on the groups built."""
    meta: dict[str, str] = field(default_factory=dict)
    """``format`` (``FORMAT_VERSION``) and ``storage_version`` of the file."""

    @classmethod
    def read(cls, path: Path | None) -> Manifest:
        """The manifest in the state file at ``path`` (``state.state_file``); empty (a
        full build) when there is none or it cannot be read."""
        if path is None:
            return cls()
        try:
            with duckdb.connect(str(path), read_only=True) as con:
                meta = dict(con.execute(f"select key, value from {STATE_SCHEMA}.meta")
                            .fetchall())
                con.execute(f"select count(*) from {STATE_SCHEMA}.{PARTS}")  # or built anew
                failures = con.execute(f"select check_name, part_group, failing_rows "
                                       f"from {STATE_SCHEMA}.check_failures").fetchall()
        except duckdb.Error:
            return cls()
        return cls({(f[0], f[1]): f[2] for f in failures}, meta)

    def write(self, con: duckdb.DuckDBPyConnection, catalog: str) -> None:
        """Store the manifest in the state file being built (attached as ``catalog``), its
        versions being those the build computed the groups for (``NEXT_PARTS``)."""
        state = f"{catalog}.{STATE_SCHEMA}"
        for table, built in ((PARTS, NEXT_PARTS), (MODELS, NEXT_MODELS)):
            con.execute(f"drop table if exists {state}.{table}")
            con.execute(f"alter table {state}.{built} rename to {table}")
        for table, rows, schema in (
                ("check_failures", [(*key, n) for key, n in self.check_failures.items()],
                 FAILURES_SCHEMA),
                ("meta", list(self.meta.items()), META_SCHEMA)):
            con.execute(f"drop table if exists {state}.{table}")
            arrow_insert(con, f"{state}.{table}", rows, schema)

    def record(self, con: duckdb.DuckDBPyConnection, catalog: str,
               failures: dict[tuple[str, str], int]) -> None:
        """Add ``failures`` ((check, group) -> rows) to the manifest written into
        ``catalog``: the outcomes of checks on models the file does not store, which only
        the build can run (group ``''``: the whole model)."""
        self.check_failures.update(failures)
        arrow_insert(con, f"{catalog}.{STATE_SCHEMA}.check_failures",
                     [(*key, n) for key, n in failures.items()], FAILURES_SCHEMA)


def chain_hashes(models: dict[str, Model], order: list[str],
                 extra_macros: tuple[str, ...] = ()) -> dict[str, str]:
    """A hash per partitioned model of its SQL as parsed (``canonical_sql``), the macros
    and every model it reads."""
    cache = parse_cache_dir()
    macros = digest(*(canonical_sql(sql, cache) for sql in (*macro_sql(), *extra_macros)))
    hashes: dict[str, str] = {}
    for name in order:
        model = models[name]
        if model.materialized == "partitioned":
            hashes[name] = digest(FORMAT_VERSION, macros, model.canonical,
                                  *sorted(hashes[d] for d in model.model_deps))
    return hashes


DELETES_PER_CHECKPOINT = 100_000
"""Rows a build deletes from the file it builds before it checkpoints that file. DuckDB
keeps what a delete did in memory it cannot spill until a checkpoint writes it: a chain's
night that loads the lookback of 200 locations again (800 partitions) deletes some 700,000
receipt lines from each of two tables and ran out of DuckDB's 256 MB without these
checkpoints. A night of a few locations deletes fewer and checkpoints only at the end."""


@dataclass
class Deletions:
    """The rows deleted from the build's files (the ``catalogs``: the warehouse and its
    state file) since their last checkpoint."""

    catalogs: tuple[str, ...]
    pending: int = 0

    def add(self, con: duckdb.DuckDBPyConnection, rows: int) -> None:
        self.pending += rows
        if self.pending >= DELETES_PER_CHECKPOINT:
            for catalog in self.catalogs:
                con.execute(f"checkpoint {catalog}")
            self.pending = 0


@dataclass
class Plan:
    """What the parts of the partitioned models derive from. Their versions are the
    tables ``NEXT_PARTS`` and ``NEXT_MODELS`` of the file being built (``state``)."""

    committed: dict[str, Committed]
    superseded: dict[str, list[str]]
    groupings: dict[str, Grouping]
    members: dict[str, dict[str, list[str]]]
    """area -> group -> its partitions."""
    partitioned: dict[str, str]
    """The partitioned models, in build order, with their lake area."""
    state: str
    """The schema (``catalog.STATE_SCHEMA``) of the build's bookkeeping."""
    deletions: Deletions
    corrupt: list[Corrupt] = field(default_factory=list)
    """Partitions whose files do not hold what their commit record says: left out."""
    kept: dict[str, set[str]] = field(default_factory=dict)
    """area -> the groups of corrupt partitions: their rows stay as they were."""
    _gone: dict[str, list[str]] | None = field(default=None, repr=False)

    @property
    def lake_versions(self) -> dict[str, str]:
        """The version of each area's table the build read (``lake_version.<area>`` in
        the state's ``meta``)."""
        return {f"lake_version.{area}": str(c.version) for area, c in self.committed.items()
                if c.version is not None}

    def stale(self, con: duckdb.DuckDBPyConnection,
              previous: str | None) -> dict[str, dict[str, list[str]]]:
        """area -> the groups (with their partitions) of which some model's part has
        another version than the file holds: the group's version changed, or the hash of
        a model of its area. ``previous`` is the schema of the file's versions (its
        ``PARTS`` and ``MODELS``; None: none, every group)."""
        new = f"{self.state}.{NEXT_PARTS}"
        rows = con.execute(f"select area, part_group from {new}" if previous is None else f"""
            select area, part_group from {new} where area in (
                select area from {self.state}.{NEXT_MODELS}
                anti join {previous}.{MODELS} using (model, area, hash))
            union all
            select area, part_group from {new}
            anti join {previous}.{PARTS} using (area, part_group, version)""").fetchall()
        stale: dict[str, dict[str, list[str]]] = {area: {} for area in self.members}
        for area, group in sorted(rows):
            stale[area][group] = self.members[area][group]
        return stale

    def gone(self, con: duckdb.DuckDBPyConnection, model: str, previous: str) -> list[str]:
        """The groups of ``model``'s area that ``previous`` (the schema of the file's
        versions) has and the lake no longer does (but for those kept): of every area at
        once, on the first call."""
        if self._gone is None:
            self._gone = {}
            for area, group in con.execute(f"""
                    select area, part_group from {previous}.{PARTS}
                    anti join {self.state}.{NEXT_PARTS} using (area, part_group)""").fetchall():
                self._gone.setdefault(area, []).append(group)
        area = self.partitioned[model]
        return sorted(set(self._gone.get(area, [])) - self.kept.get(area, set()))

    def keep_versions(self, con: duckdb.DuckDBPyConnection) -> None:
        """Add the kept groups to ``NEXT_PARTS``, at a version never current (``KEPT``)."""
        arrow_insert(con, f"{self.state}.{NEXT_PARTS}",
                     [(area, group, KEPT) for area, groups in sorted(self.kept.items())
                      for group in sorted(groups)], VERSIONS_SCHEMA)


def make_plan(con: duckdb.DuckDBPyConnection, files: LakeFiles, models: dict[str, Model],
              order: list[str], macros: tuple[str, ...], state: str,
              verify_all: bool = False, target: str = "") -> Plan:
    """The committed lake, its partitions not verified before checked (``integrity``;
    all with ``verify_all``) and the corrupt ones left out, and the version of every part
    it calls for (into ``NEXT_PARTS``). ``state`` is the schema of the warehouse's
    bookkeeping (``catalog.schema``), ``target`` the catalog of the warehouse being built
    (both are checkpointed as rows are deleted)."""
    committed = committed_loads(con, files, f"{state}.lake_rows")
    corrupt = verify_lake(con, files, committed, f"{state}.verified", verify_all)
    committed = {area: loads.without({c.partition for c in corrupt if c.area == area})
                 for area, loads in committed.items()}
    deletions = Deletions(tuple(c for c in (target, state.split(".")[0]) if c))
    superseded = superseded_receipts(con, files, committed["revenue"], state,
                                     deletions.add)
    hashes = chain_hashes(models, order, macros)
    partitioned = {n: models[n].area for n in order if models[n].materialized == "partitioned"}
    groupings: dict[str, Grouping] = {}
    members: dict[str, dict[str, list[str]]] = {}
    for area in set(partitioned.values()):
        loads = committed[area].loads
        groupings[area] = Grouping(committed[area].keys or tuple(
            k.split("=")[0] for k in next(iter(loads), "").split("/")))
        members[area] = {}
        for part in sorted(loads):
            members[area].setdefault(groupings[area].group(part), []).append(part)
    # A group is a partition (``Grouping.group``): a model's part of it is current when
    # the model's hash and the group's version (a hash of the partition's committed load
    # and the receipts other partitions took over from it) are those the file holds; kept
    # apart, a row per group and one per model (a chain's three years: 219,000 groups,
    # 3.3 million model parts). Hashes of the stored models only: a staging model is
    # computed with the marts that read it, whose hashes include its own.
    for table in (NEXT_MODELS, NEXT_PARTS):
        con.execute(f"drop table if exists {state}.{table}")
    arrow_insert(con, f"{state}.{NEXT_MODELS}", [
        (n, area, hashes[n]) for n, area in partitioned.items() if models[n].stored],
        pa.schema([("model", pa.string()), ("area", pa.string()), ("hash", pa.string())]))
    arrow_insert(con, "_plan_partitions", [
        (area, part, committed[area].loads[part][0], ",".join(superseded.get(part, ())))
        for area in members for part in committed[area].loads],
        pa.schema([("area", pa.string()), ("part_group", pa.string()),
                   ("load_id", pa.string()), ("superseded", pa.string())]))
    con.execute(f"""
        create table {state}.{NEXT_PARTS} as
        select area, part_group,
               left(sha256(part_group || ':' || load_id || ':' || superseded), 16) as version
        from _plan_partitions""")
    con.execute("drop table _plan_partitions")
    kept: dict[str, set[str]] = {}
    for bad in corrupt:
        if bad.area in groupings:
            kept.setdefault(bad.area, set()).add(groupings[bad.area].group(bad.partition))
    return Plan(committed, superseded, groupings, members, partitioned, state, deletions,
                corrupt, kept)


BATCH_GROUPS = 1095
"""Groups (a location's day each) a build computes at once: what bounds its memory,
however long the history or large the chain (three years of a location, a night of
1,095). Larger batches write fewer, larger inserts (a model's rows of a batch fill whole
row groups: 20 locations' year built in 62 s with 1,825, 88 s with 720) and take more
memory (a 1,095-day backfill of 3 locations peaked 8.5 % above the 365-day one with
1,825; ``make bench``'s ``memory``)."""


def batches(stale: dict[str, dict[str, list[str]]]) -> list[dict[str, dict[str, list[str]]]]:
    """The groups to compute, ``BATCH_GROUPS`` at a time (at least one batch, perhaps
    empty: it gives the models their schemas), by date: the lake holds a file per date
    with its locations, so a batch reads the files of its own dates only (by location,
    every batch read every date's file)."""
    def by_date(group: str) -> tuple:
        keys = parse_partition(group)
        return (*reversed(keys.values()), group)  # the date is the last key

    pairs = [(area, group) for area, groups in stale.items()
             for group in sorted(groups, key=by_date)]
    batches = []
    for start in range(0, len(pairs), BATCH_GROUPS):
        batch: dict[str, dict[str, list[str]]] = {}
        for area, group in pairs[start:start + BATCH_GROUPS]:
            batch.setdefault(area, {})[group] = stale[area][group]
        batches.append(batch)
    return batches or [{}]
