"""A build's partitioned models computed: the groups whose version changed, a batch at a
time, from what an in-memory catalog (``SCRATCH``) shows of the lake, into the copy of the
warehouse being built (``TARGET``); and their data checks on the groups computed. A model
that is not stored (staging: ``Model.stored``) is computed into ``SCRATCH`` only, for the
batch, and read from there by the models after it."""

from __future__ import annotations

from datetime import date

import duckdb

from pipeline.core import stops
from pipeline.lake.store import parse_partition
from pipeline.sqlrunner.checks import DataCheck, Where
from pipeline.sqlrunner.models import (
    STAGING_SCHEMA,
    Model,
    ModelError,
    materialize,
    references,
)
from pipeline.warehouse.lake_tables import LAKE_SCHEMA
from pipeline.warehouse.lakeviews import create_lake_views
from pipeline.warehouse.plan import Deletions, Grouping, Plan, batches
from pipeline.warehouse.project import parse_cache_dir

TARGET = "wh"
"""The copy being built, as the build's connection names it (never stored in it)."""
SCRATCH = "memory"
"""The build connection's own in-memory catalog: models computed for a batch of groups."""


def use_catalog(con: duckdb.DuckDBPyConnection, catalog: str) -> None:
    """Make ``catalog`` the one that unqualified names refer to; staging models are found
    where the build computes them (``SCRATCH``)."""
    con.execute(f"use {catalog}")
    con.execute(f"set search_path = '{catalog}.main,{SCRATCH}.{STAGING_SCHEMA}'")


def computed(model: Model) -> str:
    """Where a build computes ``model`` when it is not stored: ``SCRATCH``'s staging."""
    return f"{SCRATCH}.{model.qualified}"


def create_model(con: duckdb.DuckDBPyConnection, models: dict[str, Model], name: str,
                 how: str = "table") -> None:
    """``models[name]`` created as ``how`` in the catalog in use, or in ``SCRATCH`` when it
    is not stored (``sqlrunner.models.create_model``)."""
    materialize(con, models, name, how, SCRATCH)


def compute_partitioned(con: duckdb.DuckDBPyConnection,
                         models: dict[str, Model], plan: Plan, checked: dict[DataCheck, str],
                         stale: dict[str, dict[str, list[str]]], previous: str | None,
                         existing: dict[str, str]) -> dict:
    """Replace, in ``TARGET``, the partitioned models' rows of the ``stale`` groups (area ->
    group -> partitions), a batch of groups at a time, and run the partitioned checks
    there. A model whose every group is stale (its SQL changed, a full build) or that the
    file lacks is created anew. ``previous`` is the table of the versions the file holds
    (None: a new file). Returns per check its failing rows per group and a sample."""
    partitioned = list(plan.partitioned)
    found: dict[DataCheck, tuple[dict[str, int], list]] = {c: ({}, []) for c in checked}
    anew = set()  # made in this build: they hold only the groups computed by it
    first = True
    for name in partitioned:
        model = models[name]
        area = model.area
        if not model.stored:
            continue
        if previous and existing.get(model.qualified) == "table" and plan.members[area] and \
                set(stale.get(area, {})) != set(plan.members[area]):
            gone = plan.gone(con, name, previous)
            if gone:  # partitions no longer in the lake
                where = plan.groupings[area].predicate(con, gone, "_gone_groups")
                plan.deletions.add(con, con.execute(
                    f"delete from {TARGET}.{model.qualified} where {where}").fetchone()[0])
            continue
        if model.qualified in existing:
            con.execute(f"drop {existing[model.qualified]} {TARGET}.{model.qualified}")
        anew.add(name)
    for batch in batches(stale):
        wanted = {area: {part for parts in batch.get(area, {}).values() for part in parts}
                  for area in plan.members}
        create_lake_views(con, plan.committed, plan.superseded, partitions=wanted,
                          loads=wanted.get("revenue", ()))
        use_catalog(con, SCRATCH)
        where = {area: plan.groupings[area].predicate(con, list(groups), groups_table(area))
                 for area, groups in batch.items() if groups}
        for name in partitioned:
            stops.check()
            area = models[name].area
            _compute_batch(con, models, name, plan.groupings[area], where.get(area),
                           name in anew, first=first, deletions=plan.deletions)
        for check, area in checked.items():
            if batch.get(area):
                failures, sample = found[check]
                failures.update(_failing_groups(con, check, area, plan.groupings[area]))
                if failures and not sample:
                    sample += con.execute(f"select * from ({check.sql}) limit 5").fetchall()
        for name in partitioned:
            model = models[name]
            con.execute(f"drop view {model.qualified}" if model.stored
                        else f"drop table {computed(model)}")
        first = False
    return found


def groups_table(area: str) -> str:
    """The table of the groups a build computes now of ``area`` (``Grouping.predicate``)."""
    return f"_groups_{area}"


def _compute_batch(con: duckdb.DuckDBPyConnection, models: dict[str, Model], name: str,
                   grouping: Grouping, predicate: str | None, anew: bool, first: bool,
                   deletions: Deletions) -> None:
    """One partitioned model's rows of the groups ``predicate`` selects (None: the batch
    has none of its area) into ``TARGET`` (in place of those there), computed from what
    ``SCRATCH`` shows of the lake and of the models it reads; then ``SCRATCH`` shows the
    model's rows of these groups to the models after it. A model made ``anew`` by this
    build is created by its ``first`` batch and holds no rows of the groups of a later
    one."""
    model = models[name]
    if not model.stored:  # the batch's rows, for the models after it
        create_model(con, models, name, "table")
        return
    target = f"{TARGET}.{model.qualified}"
    create_model(con, models, name, "view")
    if anew and first:
        con.execute(f"create table {target} as select * from {model.qualified} limit 0")
    if predicate is not None:
        if not anew:
            deletions.add(con, con.execute(f"delete from {target} where {predicate}")
                          .fetchone()[0])
        try:
            added = con.execute(f"insert into {target} by name "
                                f"select * from {model.qualified}").fetchone()[0]
        except duckdb.Error as exc:
            raise ModelError(f"model {name} ({model.path.name}): {exc}") from None
        within = con.execute(f"select count(*) from {target} where {predicate}").fetchone()[0]
        if within != added:
            outside = [row[0] for row in con.execute(
                f"select distinct {grouping.group_sql()} from {model.qualified} "
                f"where not {predicate} order by 1 limit 3").fetchall()]
            raise ModelError(f"model {name} has rows outside the partitions it was built "
                             f"for: {', '.join(outside)}")
    con.execute(f"drop view {model.qualified}")
    con.execute(f"create view {model.qualified} as select * from {target} "
                f"where {predicate or 'false'}")


def _failing_groups(con: duckdb.DuckDBPyConnection, check: DataCheck, area: str,
                    grouping: Grouping) -> dict[str, int]:
    """Rows breaking a partitioned check, per group, in the groups computed now."""
    try:
        return dict(con.execute(f"select {grouping.group_sql()}, count(*) "
                                f"from ({check.sql}) group by all").fetchall())
    except duckdb.Error as exc:
        raise ModelError(f"check {check.name} of {check.model} runs on the partitions of "
                         f"lake area {area}, so it must return their keys "
                         f"{list(grouping.keys)}: {exc}") from None


def where_of(group: str) -> Where:
    """A group (``location_id=1001/business_date=2026-11-20``) as the partition it is."""
    values = parse_partition(group)
    day = values.get("business_date")
    location = values.get("location_id")
    return Where((("location_id", int(location) if location else None),
                  ("business_date", date.fromisoformat(day) if day else None)))


def check_key(check: DataCheck) -> str:
    return f"{check.model}:{check.name}"


def partitioned_checks(models: dict[str, Model],
                       checks: tuple[DataCheck, ...]) -> dict[DataCheck, str]:
    """The checks that read partitioned models of one lake area only, with the area: they
    run on the partitions a build computes."""
    found, cache = {}, parse_cache_dir()
    for check in checks:
        reads, lake_tables = references(check.sql, check.name, LAKE_SCHEMA, cache)
        areas = {models[m].area for m in reads if m in models}
        if reads and not lake_tables and reads <= models.keys() and len(areas) == 1 \
                and None not in areas:
            found[check] = areas.pop()
    return found
