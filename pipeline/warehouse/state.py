"""The build's bookkeeping beside the warehouse: a DuckDB file of its own,
``<name>.state/<build id>.duckdb`` (schema ``plan.STATE_SCHEMA``), named by the build that
wrote it; the warehouse names its build (the macro ``pos_etl_build_id()``). A build puts
its state file in place first and the warehouse after it, then removes the state files of
the files it no longer keeps (``standby.publish``): a kill at any point leaves a
warehouse that finds its own state.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import duckdb

from pipeline.warehouse.lakeviews import sql_path, table_exists
from pipeline.warehouse.plan import (
    BUILT_FROM,
    PARTS,
    STATE_SCHEMA,
    Manifest,
    built_from,
    built_from_sql,
    location_day,
)

STATE = "st"
"""The catalog a build attaches its state file as."""
BUILD_ID = "pos_etl_build_id"
"""The warehouse's macro that names the build (and so the state file) it came from."""


def state_dir(warehouse_path: Path) -> Path:
    """The folder of the warehouse's state files (``warehouse.state`` beside it)."""
    return warehouse_path.with_name(f"{warehouse_path.stem}.state")


FREE_SHARE_KEPT = 0.25
"""The share of free blocks a state file may carry to the next build's copy; more (a
build that dropped and made its receipt keys anew, a chain that shrank) and the next
build writes a compact copy instead."""


def copy_state(source: Path, target: Path) -> None:
    """The state file at ``source`` as the next build's at ``target``: a copy of the file
    (fast), or, when a quarter of it is free blocks, its tables written into a new file
    (``COPY FROM DATABASE``), so that free space is not carried from build to build."""
    with duckdb.connect(str(source), read_only=True) as con:
        total, free = con.execute("select total_blocks, free_blocks "
                                  "from pragma_database_size()").fetchone()
    if not total or free / total <= FREE_SHARE_KEPT:
        shutil.copyfile(source, target)
        return
    with duckdb.connect() as con:
        con.execute(f"attach '{sql_path(source)}' as _kept (read_only)")
        con.execute(f"attach '{sql_path(target)}' as _next")
        con.execute("copy from database _kept to _next")
        con.execute("detach _next")
        con.execute("detach _kept")


def build_id(warehouse_path: Path) -> str | None:
    """The build the warehouse at ``warehouse_path`` came from; None without one (no file,
    or one of an older format)."""
    if not warehouse_path.exists():
        return None
    try:
        with duckdb.connect(str(warehouse_path), read_only=True) as con:
            return str(con.execute(f"select {BUILD_ID}()").fetchone()[0])
    except duckdb.Error:
        return None


def state_file(warehouse_path: Path, build: str | None = None) -> Path | None:
    """The state file of the warehouse in place (or of ``build``), if there is one."""
    build = build or build_id(warehouse_path)
    if build is None:
        return None
    path = state_dir(warehouse_path) / f"{build}.duckdb"
    return path if path.exists() else None


def built_from_state(path: Path | None) -> dict[int, set[date]]:
    """``plan.built_from`` of the state file at ``path`` (nothing: none, or unreadable)."""
    if path is None:
        return {}
    try:
        with duckdb.connect(str(path), read_only=True) as con:
            return built_from(con)
    except duckdb.Error:
        return {}


def lost_partitions(con: duckdb.DuckDBPyConnection, before: Path | None, catalog: str
                    ) -> list[tuple[int, date]]:
    """(location, business date) of the revenue partitions the state file ``before`` (the
    warehouse in place's) was built from and the state being built (attached as
    ``catalog``) is not: compared in SQL, so a long history costs no Python per day."""
    if before is None:
        return []
    try:
        con.execute(f"attach '{sql_path(before)}' as _before (read_only)")
    except duckdb.Error:
        return []  # unreadable: as without one (``built_from_state``)
    try:
        groups = con.execute(f"""
            {_built_from_before(con)}
            except
            {built_from_sql(f"{catalog}.{STATE_SCHEMA}")}""", [BUILT_FROM, BUILT_FROM]).fetchall()
    except duckdb.Error:
        groups = []
    finally:
        con.execute("detach _before")
    return sorted(location_day(group) for (group,) in groups)


LEGACY_PARTS = "parts"
"""The versions of every model's groups in a state file of format 6 or before: the first
build after an upgrade (a new file) compares the days its warehouse in place was built from
with the lake all the same."""


def _built_from_before(con: duckdb.DuckDBPyConnection) -> str:
    """``built_from_sql`` of the state attached as ``_before``, of whichever format."""
    state = f"_before.{STATE_SCHEMA}"
    return built_from_sql(state) if table_exists(con, f"{state}.{PARTS}") else \
        f"select part_group from {state}.{LEGACY_PARTS} where model = ?"


def recorded_failures(warehouse_path: Path) -> dict[str, int]:
    """``model:check`` -> failing rows, as the build of the warehouse at ``warehouse_path``
    recorded them in its state file: what only a build can check (``checks.run_checks``)."""
    recorded: dict[str, int] = {}
    for (check, _group), rows in Manifest.read(state_file(warehouse_path)).check_failures.items():
        recorded[check] = recorded.get(check, 0) + rows
    return recorded


def remove_killed_builds(warehouse_path: Path) -> None:
    """The half-built files of killed builds (and the folders DuckDB spilled to), beside
    the warehouse and in its state folder (made if missing). Only under the build lock."""
    states = state_dir(warehouse_path)
    states.mkdir(exist_ok=True)
    for stale in [*warehouse_path.parent.glob(f".{warehouse_path.name}.*.building*"),
                  *warehouse_path.parent.glob(f".{warehouse_path.name}.*.link"),
                  *states.glob("*.building*")]:
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        stale.unlink(missing_ok=True)
