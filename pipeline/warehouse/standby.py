"""Two warehouse files taking turns: a night's publication costs the night, not the history.

Readers open ``warehouse.duckdb``. Beside it, in the state folder, lies the file it
replaced: ``warehouse.state/standby.duckdb``, one build behind. A build first brings the
standby level with the file in place: the rows of the partitioned models' groups whose
version differs between the two (what the last build changed) are copied from the file
in place (``catch_up``), so the standby holds what the file in place holds, with its
state file; then the build goes on as on a copy: it computes what changed since,
checks, and publishes the standby as ``warehouse.duckdb`` (a hard link renamed over it);
the file it replaced becomes the next standby. What a night writes follows the night:
the last night's groups and its own, and the small tables rebuilt. Where the standby
cannot be used (there is none yet, a reader still holds it, its tables differ from the
file in place's, it lags by more than ``CATCH_UP_SHARE`` of the groups, or a build
changing it was killed) the build copies the file in place instead, as every build did
before.

The rules that held for the copy hold here:

- a reader is never blocked and never sees a half-built state: ``warehouse.duckdb`` is
  always a whole, published file, and a reader keeps the file it opened (the standby is
  only changed when no process holds it: DuckDB's lock on it says so for other
  processes, the process's own open files for this one);
- a kill at any point leaves the old file in place: a build marks the standby before it
  changes it (``DIRTY``); a marked standby is thrown away by the next build, which copies.
  The publication's steps are each one rename; ``recover`` finishes or undoes a
  publication a kill stopped between them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import duckdb

from pipeline.core.files import shared
from pipeline.lake.store import parse_partition
from pipeline.warehouse.lakeviews import sql_path
from pipeline.warehouse.plan import FORMAT_VERSION, MODELS, PARTS, STATE_SCHEMA, Grouping
from pipeline.warehouse.state import build_id, state_dir, state_file

STANDBY = "standby.duckdb"
"""The standby file, in the warehouse's state folder."""
DIRTY = "standby.changing"
"""Marks a standby a build is changing in place: untrusted until it is published."""
NEXT = "standby.next"
"""The file in place, linked here while a publication runs: the next standby."""


def standby_path(warehouse_path: Path) -> Path:
    return state_dir(warehouse_path) / STANDBY


def _same(a: Path, b: Path) -> bool:
    return a.exists() and b.exists() and os.path.samefile(a, b)


def recover(warehouse_path: Path) -> None:
    """Finish or undo what a killed build left of the standby (under the build lock):
    a publication stopped after the standby went in is finished (the file it replaced
    becomes the standby); a standby changed and not published is removed."""
    states = state_dir(warehouse_path)
    standby, following, dirty = states / STANDBY, states / NEXT, states / DIRTY
    if following.exists():
        if _same(standby, warehouse_path):  # published: the replaced file is the standby
            dirty.unlink(missing_ok=True)
            os.replace(following, standby)
        else:
            following.unlink()
    if dirty.exists():
        discard_standby(warehouse_path)
    if _same(standby, warehouse_path):  # never build into the file readers open
        standby.unlink()


def held_here(path: Path) -> bool:
    """Whether this process has ``path``'s file open (a DuckDB connection of its own: the
    file's lock does not keep a process from itself). Without ``/proc``: assumed."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return True
    wanted = path.stat()
    for fd in fds.iterdir():
        try:
            seen = fd.stat()
        except OSError:
            continue
        if (seen.st_dev, seen.st_ino) == (wanted.st_dev, wanted.st_ino):
            return True
    return False


def _free(path: Path) -> bool:
    """Whether no other process holds ``path`` (DuckDB's lock: a reader's read-only
    connection holds it shared, so a writer's cannot be taken)."""
    try:
        duckdb.connect(str(path)).close()
    except duckdb.IOException:
        return False
    return True


CATCH_UP_SHARE = 0.25
"""The share of the partitioned models' groups the standby may lag by: beyond, copying the
whole file is about as cheap as copying their rows (a chain's night lags by about 0.4 %
of a year's groups, 0.1 % of three years')."""


def usable_standby(warehouse_path: Path, current_state: Path | None
                   ) -> dict[str, list[str]] | None:
    """The groups (per partitioned model) whose rows the standby holds in another version
    than the file in place, when a build may bring it level and up to date in place: it
    exists, no hard link shares it (a data folder copied with ``cp -al``, a backup's
    link: changed in place, the other would change too), nobody holds it, it has its
    state file, its tables and columns are the file in
    place's, its state is of this release's format (``FORMAT_VERSION``: the standby of
    the build before an upgrade is not), and it lags by at most ``CATCH_UP_SHARE`` of the
    groups. None: the build copies the file in place instead."""
    standby = standby_path(warehouse_path)
    if current_state is None or not standby.exists() or shared(standby) \
            or held_here(standby):
        return None  # (a standby another name links to is not ours to change in place)
    build = build_id(standby)
    state = state_file(warehouse_path, build) if build else None
    if state is None or not _free(standby):
        return None
    with duckdb.connect() as con:
        for name, path in (("sb", standby), ("cur", warehouse_path),
                           ("sb_state", state), ("cur_state", current_state)):
            con.execute(f"attach '{sql_path(path)}' as {name} (read_only)")
        shape = ("select schema_name, table_name, column_name, data_type "
                 "from duckdb_columns() where database_name = '{}'")
        sb, cur = shape.format("sb"), shape.format("cur")
        differs = con.execute(f"select count(*) from (({sb} except all {cur}) "
                              f"union all ({cur} except all {sb}))").fetchone()[0]
        if differs or _format(con, "sb_state") != FORMAT_VERSION:
            return None
        cur_state, sb_state = f"cur_state.{STATE_SCHEMA}", f"sb_state.{STATE_SCHEMA}"
        # a model's part lags when its group's version or the model's hash differs
        total = con.execute(f"select count(*) from {cur_state}.{MODELS} "
                            f"inner join {cur_state}.{PARTS} using (area)").fetchone()[0]
        lag = con.execute(f"""
            with models as (select * from {cur_state}.{MODELS}),
            groups as (
                select coalesce(c.area, s.area) as area,
                       coalesce(c.part_group, s.part_group) as part_group,
                       c.version is distinct from s.version as differs
                from {cur_state}.{PARTS} as c
                full outer join {sb_state}.{PARTS} as s using (area, part_group)),
            hashes as (
                select m.model, m.hash is distinct from s.hash as differs
                from models as m left join {sb_state}.{MODELS} as s using (model, area))
            select model, part_group from models
            inner join groups using (area) inner join hashes using (model)
            where groups.differs or hashes.differs""").fetchall()
    if len(lag) > CATCH_UP_SHARE * max(total, 1):
        return None
    behind: dict[str, list[str]] = {}
    for model, group in lag:
        behind.setdefault(model, []).append(group)
    return behind


def _format(con: duckdb.DuckDBPyConnection, catalog: str) -> str | None:
    """The format of the state file attached as ``catalog`` (None: unreadable)."""
    try:
        found = con.execute(f"select value from {catalog}.{STATE_SCHEMA}.meta "
                            f"where key = 'format'").fetchone()
    except duckdb.Error:
        return None
    return found[0] if found else None


def catch_up(con: duckdb.DuckDBPyConnection, target: str, warehouse_path: Path,
             behind: dict[str, list[str]]) -> None:
    """In the standby (attached as ``target``), the rows of the groups it lags by, as the
    file in place holds them (``usable_standby``): afterwards the two hold the same."""
    con.execute(f"attach '{sql_path(warehouse_path)}' as _current (read_only)")
    try:
        for model, groups in sorted(behind.items()):
            keys = tuple(parse_partition(groups[0]))
            where = Grouping(keys).predicate(con, sorted(groups), "_behind_groups")
            con.execute(f"delete from {target}.main.{model} where {where}")
            con.execute(f"insert into {target}.main.{model} by name "
                        f"select * from _current.main.{model} where {where}")
    finally:
        con.execute("detach _current")


def mark_changing(warehouse_path: Path) -> None:
    """Mark the standby as being changed in place (before the build attaches it)."""
    marker = state_dir(warehouse_path) / DIRTY
    with open(marker, "w") as fh:
        fh.flush()
        os.fsync(fh.fileno())


def discard_standby(warehouse_path: Path) -> None:
    """A standby a failed build changed: gone (the next build copies)."""
    standby = standby_path(warehouse_path)
    for path in (standby, Path(f"{standby}.wal"), state_dir(warehouse_path) / DIRTY):
        path.unlink(missing_ok=True)


def publish(built: Path, built_state: Path, warehouse_path: Path, build: str) -> None:
    """Switch in a build's files, both whole on disk (fsynced): the state file first, then
    the warehouse (``built``: the standby changed in place, or a new file); the file
    replaced becomes the standby, and state files of neither go."""
    for path in (built, built_state):
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())
    states = state_dir(warehouse_path)
    standby, following = states / STANDBY, states / NEXT
    os.replace(built_state, states / f"{build}.duckdb")
    following.unlink(missing_ok=True)
    if warehouse_path.exists():
        # (a file system without hard links keeps no standby: its builds copy)
        with contextlib.suppress(OSError):
            os.link(warehouse_path, following)
    # A WAL next to the warehouse belongs to the file being replaced (left by a read-write
    # session that died): DuckDB would refuse the new file with it.
    Path(f"{warehouse_path}.wal").unlink(missing_ok=True)
    if built == standby:
        link = warehouse_path.with_name(f".{warehouse_path.name}.{build}.link")
        os.link(built, link)
        os.replace(link, warehouse_path)
        (states / DIRTY).unlink(missing_ok=True)
    else:
        os.replace(built, warehouse_path)
    if following.exists():
        os.replace(following, standby)
    keep = {f"{build}.duckdb"}
    standby_build = build_id(standby) if standby.exists() else None
    if standby_build:
        keep.add(f"{standby_build}.duckdb")
    for old in states.iterdir():
        if old.suffix == ".duckdb" and old.name != STANDBY and old.name not in keep:
            old.unlink(missing_ok=True)
