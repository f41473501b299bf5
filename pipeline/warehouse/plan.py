"""What a build must compute: the version of every model's rows of every group.

Partitioned models are kept per group of lake partitions (``Grouping``: a location's
business date). A group's version is a hash of everything its rows derive
from: its partitions' committed loads, the receipts other partitions took over from them,
and the SQL (as parsed: comments and layout do not count) of the model, of the models
it reads and of the macros. A build computes the
groups whose version changed and keeps the others, so a night costs the days it
loads, not the history.

The manifest (every model's groups and their versions, the failures of the checks per
group, the file's format) is a table of the warehouse file itself (``_state``), so it is
switched in with it, atomically.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.lake import parse_partition
from pipeline.macros import macro_sql
from pipeline.warehouse.integrity import Corrupt, verify_lake
from pipeline.warehouse.lakeviews import (
    Committed,
    arrow_insert,
    committed_loads,
    superseded_receipts,
)
from pipeline.warehouse.models import Model, canonical_sql

STATE_SCHEMA = "_state"
"""The warehouse's own bookkeeping: the manifest, every receipt's key."""
FORMAT_VERSION = "3"
"""Versions change with this (a change of how models are stored): 3, every model a table
of the file itself, a group per lake partition."""


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

    def predicate(self, groups: list[str]) -> str:
        """SQL true for the rows of ``groups``, on the keys' own columns (consecutive days
        of a location as one range), so that DuckDB skips the row groups of others."""
        days: dict[tuple, list[date]] = {}
        for group in groups:
            values = parse_partition(group)
            day = date.fromisoformat(values.pop(self.keys[-1]))
            days.setdefault(tuple(values.items()), []).append(day)
        terms = []
        for head, found in sorted(days.items()):
            found.sort()
            start = end = found[0]
            for day in [*found[1:], None]:
                if day is not None and day == end + timedelta(days=1):
                    end = day
                    continue
                column = self.keys[-1]
                terms.append("(" + " and ".join(
                    [f"{k} = {_literal(v)}" for k, v in head]
                    + [f"{column} = date '{start}'" if start == end
                       else f"{column} between date '{start}' and date '{end}'"]) + ")")
                start = end = day
        return "(" + " or ".join(terms) + ")" if terms else "false"


def _literal(value: str) -> str:
    return value if value.isdigit() else "'" + value.replace("'", "''") + "'"


PARTS_SCHEMA = pa.schema([("model", pa.string()), ("part_group", pa.string()),
                          ("version", pa.string())])
FAILURES_SCHEMA = pa.schema([("check_name", pa.string()), ("part_group", pa.string()),
                             ("failing_rows", pa.int64())])
META_SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string())])


@dataclass
class Manifest:
    """Every group of every partitioned model in a warehouse, with its version."""

    versions: dict[tuple[str, str], str] = field(default_factory=dict)
    """(model, group) -> version."""
    check_failures: dict[tuple[str, str], int] = field(default_factory=dict)
    """(check, group) -> failing rows, of the checks that run on the groups built."""
    meta: dict[str, str] = field(default_factory=dict)
    """``format`` (``FORMAT_VERSION``) and ``storage_version`` of the file."""

    @classmethod
    def read(cls, warehouse_path: Path) -> Manifest:
        """The manifest of the warehouse file in place; empty (a full build) when there is
        none or it cannot be read."""
        if not warehouse_path.exists():
            return cls()
        try:
            with duckdb.connect(str(warehouse_path), read_only=True) as con:
                meta = dict(con.execute(f"select key, value from {STATE_SCHEMA}.meta")
                            .fetchall())
                parts = con.execute(f"select model, part_group, version "
                                    f"from {STATE_SCHEMA}.parts").fetchall()
                failures = con.execute(f"select check_name, part_group, failing_rows "
                                       f"from {STATE_SCHEMA}.check_failures").fetchall()
        except duckdb.Error:
            return cls()
        return cls({(p[0], p[1]): p[2] for p in parts}, {(f[0], f[1]): f[2] for f in failures},
                   meta)

    def current(self, model: str, group: str, version: str) -> bool:
        return self.versions.get((model, group)) == version

    def write(self, con: duckdb.DuckDBPyConnection, catalog: str) -> None:
        """Store the manifest in the warehouse being built (attached as ``catalog``)."""
        con.execute(f"create schema if not exists {catalog}.{STATE_SCHEMA}")
        for table, rows, schema in (
                ("parts", [(*key, v) for key, v in self.versions.items()], PARTS_SCHEMA),
                ("check_failures", [(*key, n) for key, n in self.check_failures.items()],
                 FAILURES_SCHEMA),
                ("meta", list(self.meta.items()), META_SCHEMA)):
            con.execute(f"drop table if exists {catalog}.{STATE_SCHEMA}.{table}")
            arrow_insert(con, f"{catalog}.{STATE_SCHEMA}.{table}", rows, schema)


def chain_hashes(models: dict[str, Model], order: list[str],
                 extra_macros: tuple[str, ...] = ()) -> dict[str, str]:
    """A hash per partitioned model of its SQL as parsed (``canonical_sql``), the macros
    and every model it reads."""
    macros = digest(*map(canonical_sql, (*macro_sql(), *extra_macros)))
    hashes: dict[str, str] = {}
    for name in order:
        model = models[name]
        if model.materialized == "partitioned":
            hashes[name] = digest(FORMAT_VERSION, macros, model.canonical,
                                  *sorted(hashes[d] for d in model.model_deps))
    return hashes


@dataclass
class Plan:
    """What the parts of the partitioned models derive from, and their versions."""

    committed: dict[str, Committed]
    superseded: dict[str, list[str]]
    groupings: dict[str, Grouping]
    members: dict[str, dict[str, list[str]]]
    """area -> group -> its partitions."""
    versions: dict[str, dict[str, str]]
    """model -> group -> the version its part must have."""
    corrupt: list[Corrupt] = field(default_factory=list)
    """Partitions whose files do not hold what their commit record says: left out."""
    kept: dict[str, set[str]] = field(default_factory=dict)
    """area -> the groups of corrupt partitions: their rows stay as they were."""

    def stale(self, models: dict[str, Model], is_current) -> dict[str, dict[str, list[str]]]:
        """area -> the groups (with their partitions) of which some model's part is not
        ``is_current(model, group, version)``."""
        stale: dict[str, dict[str, list[str]]] = {}
        for name, versions in self.versions.items():
            area = models[name].area
            stale.setdefault(area, {}).update(
                (group, self.members[area][group]) for group, version in versions.items()
                if not is_current(name, group, version))
        return stale


def make_plan(con: duckdb.DuckDBPyConnection, lake_dir: Path, models: dict[str, Model],
              order: list[str], macros: tuple[str, ...], state: str,
              verify_all: bool = False) -> Plan:
    """The committed lake, its partitions not verified before checked (``integrity``;
    all with ``verify_all``) and the corrupt ones left out, and the version of every part
    it calls for. ``state`` is the schema of the warehouse's bookkeeping."""
    committed = committed_loads(con, lake_dir)
    corrupt = verify_lake(con, lake_dir, committed, f"{state}.verified", verify_all)
    committed = {area: loads.without({c.partition for c in corrupt if c.area == area})
                 for area, loads in committed.items()}
    superseded = superseded_receipts(con, lake_dir, committed["revenue"],
                                     f"{state}.receipt_keys")
    hashes = chain_hashes(models, order, macros)
    partitioned = [n for n in order if models[n].materialized == "partitioned"]
    groupings: dict[str, Grouping] = {}
    members: dict[str, dict[str, list[str]]] = {}
    for area in {models[n].area for n in partitioned}:
        loads = committed[area].loads
        groupings[area] = Grouping(tuple(k.split("=")[0] for k in next(iter(loads), "").split("/")))
        members[area] = {}
        for part in sorted(loads):
            members[area].setdefault(groupings[area].group(part), []).append(part)
    versions: dict[str, dict[str, str]] = {}
    for name in partitioned:
        area = models[name].area
        loads = committed[area].loads
        versions[name] = {group: digest(hashes[name], *(
            f"{part}:{loads[part][0]}:{','.join(superseded.get(part, []))}" for part in parts))
            for group, parts in members[area].items()}
    kept: dict[str, set[str]] = {}
    for bad in corrupt:
        if bad.area in groupings:
            kept.setdefault(bad.area, set()).add(groupings[bad.area].group(bad.partition))
    return Plan(committed, superseded, groupings, members, versions, corrupt, kept)


BATCH_GROUPS = 1095
"""Groups (a location's day each) a build computes at once: what bounds its memory,
however long the history or large the chain (three years of a location, a night of
1,095). Larger batches write fewer, larger inserts (a model's rows of a batch fill whole
row groups: 20 locations' year built in 62 s with 1,825, 88 s with 720) and take more
memory (a 1,095-day backfill of 3 locations peaked 8.5 % above the 365-day one with
1,825; ``make bench``'s ``memory``)."""


def batches(stale: dict[str, dict[str, list[str]]]) -> list[dict[str, dict[str, list[str]]]]:
    """The groups to compute, ``BATCH_GROUPS`` at a time (at least one batch, perhaps
    empty: it gives the models their schemas)."""
    pairs = [(area, group) for area, groups in stale.items() for group in sorted(groups)]
    batches = []
    for start in range(0, len(pairs), BATCH_GROUPS):
        batch: dict[str, dict[str, list[str]]] = {}
        for area, group in pairs[start:start + BATCH_GROUPS]:
            batch.setdefault(area, {})[group] = stale[area][group]
        batches.append(batch)
    return batches or [{}]
