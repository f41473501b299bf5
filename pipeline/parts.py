"""Partitioned models: their rows kept as Parquet parts, one per model and month.

A model marked ``-- materialized: partitioned`` has the grain of one lake area's
partitions (revenue: a location's business date). Its rows are kept as one part per month
of partitions (``Grouping``), ``<warehouse>_parts/<model>/location_id=…/_part_month=…/
part-<build id>_0.parquet``; the warehouse file holds a view over the parts of its build.
A part's version is a hash of everything its rows derive from: its partitions' committed
loads, the receipts other partitions took over from them, and the SQL of the model and of
the models it reads (and the macros). A build computes the parts whose version changed
and keeps the others, so a night costs the month it touches, not the history.

The manifest (which part each model and group has, its version and rows) is a table
of the warehouse file itself, so it is switched in with it, atomically. Parts are never
overwritten: a part replaced by a build stays on disk for ``REPLACED_PART_SECONDS``, so a
reader that opened the previous warehouse keeps reading a complete old state; parts that
no warehouse names (written by a build that was killed) are removed by the next build.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

STATE_SCHEMA = "_state"
"""The warehouse's own bookkeeping: the manifest of parts, parts replaced lately."""
FORMAT_VERSION = "1"
"""Part versions change with this (a change of how parts are written)."""
REPLACED_PART_SECONDS = 24 * 3600
"""How long a replaced part is kept for readers of the warehouse file it belonged to."""


def parts_dir(warehouse_path: Path) -> Path:
    """Where the parts of a warehouse file live: ``<name>_parts`` beside it."""
    return warehouse_path.with_name(f"{warehouse_path.stem}_parts")


def digest(*values: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, values)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Part:
    """One model's rows of one group of lake partitions (``file`` None: it has none)."""

    model: str
    group: str
    """Its partitions' group: ``location_id=1001/_part_month=2026-11``."""
    version: str
    file: str | None
    rows: int


@dataclass
class Manifest:
    """Every part of a warehouse and the parts it replaced (with when)."""

    parts: dict[tuple[str, str], Part] = field(default_factory=dict)
    replaced: dict[str, float] = field(default_factory=dict)
    check_failures: dict[tuple[str, str], int] = field(default_factory=dict)
    """(check, group) -> failing rows, of the checks that run on the parts built."""

    @classmethod
    def read(cls, warehouse_path: Path) -> Manifest:
        """The manifest of the warehouse file in place; empty (a full build) when there is
        none or it cannot be read."""
        if not warehouse_path.exists():
            return cls()
        try:
            with duckdb.connect(str(warehouse_path), read_only=True) as con:
                parts = con.execute(f"select model, part_group, version, file, rows "
                                    f"from {STATE_SCHEMA}.parts").fetchall()
                replaced = con.execute(f"select file, replaced_at "
                                       f"from {STATE_SCHEMA}.replaced_parts").fetchall()
                failures = con.execute(f"select check_name, part_group, failing_rows "
                                       f"from {STATE_SCHEMA}.check_failures").fetchall()
        except duckdb.Error:
            return cls()
        return cls({(p[0], p[1]): Part(*p) for p in parts}, dict(replaced),
                   {(f[0], f[1]): f[2] for f in failures})

    def current(self, model: str, group: str, version: str) -> bool:
        part = self.parts.get((model, group))
        return part is not None and part.version == version

    def files(self, model: str) -> list[str]:
        return sorted(p.file for (m, _), p in self.parts.items() if m == model and p.file)

    def rows(self, model: str) -> int:
        return sum(p.rows for (m, _), p in self.parts.items() if m == model)

    def write(self, con: duckdb.DuckDBPyConnection) -> None:
        """Store the manifest in the warehouse being built."""
        con.execute(f"create schema if not exists {STATE_SCHEMA}")
        arrow_insert(con, f"{STATE_SCHEMA}.parts",
                     [(p.model, p.group, p.version, p.file, p.rows)
                      for p in self.parts.values()], PARTS_SCHEMA)
        arrow_insert(con, f"{STATE_SCHEMA}.replaced_parts", list(self.replaced.items()),
                     REPLACED_SCHEMA)
        arrow_insert(con, f"{STATE_SCHEMA}.check_failures",
                     [(*key, n) for key, n in self.check_failures.items()], FAILURES_SCHEMA)


def arrow_insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple],
                 schema: pa.Schema) -> None:
    """Create ``table`` (if new) and add ``rows`` through Arrow (executemany is slow)."""
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    data = pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema,
                                                                             strict=True)],
                                schema=schema)
    relation = con.from_arrow(data)
    try:
        relation.insert_into(table)
    except duckdb.CatalogException:
        relation.create(table)


PARTS_SCHEMA = pa.schema([("model", pa.string()), ("part_group", pa.string()),
                          ("version", pa.string()), ("file", pa.string()), ("rows", pa.int64())])
REPLACED_SCHEMA = pa.schema([("file", pa.string()), ("replaced_at", pa.float64())])
FAILURES_SCHEMA = pa.schema([("check_name", pa.string()), ("part_group", pa.string()),
                             ("failing_rows", pa.int64())])


GROUP_KEY = "_part_month"
"""The column and folder key of a part's month (written into parts, hidden by the views)."""


@dataclass(frozen=True)
class Grouping:
    """Parts hold a month of partitions: a location's business days of one month, say.

    A part per day would make a year of three locations 1,095 files per model, and files
    are what a build pays for (writing them, listing them in views); a month keeps a
    night's work small (the days of the month it touches) and the file count low.
    ``keys`` are the area's partition keys; the last is a date.
    """

    keys: tuple[str, ...]

    def group(self, partition: str) -> str:
        """``location_id=1001/business_date=2026-11-20`` -> its month's group,
        ``location_id=1001/_part_month=2026-11``."""
        head, _, last = partition.rpartition("/")
        month = f"{GROUP_KEY}={last.split('=', 1)[1][:7]}"
        return f"{head}/{month}" if head else month

    def month_sql(self) -> str:
        return f"strftime({self.keys[-1]}, '%Y-%m')"

    def group_sql(self) -> str:
        """The group's folder path as SQL over a model's columns."""
        return " || '/' || ".join([*(f"'{k}=' || cast({k} as varchar)" for k in self.keys[:-1]),
                                   f"'{GROUP_KEY}=' || {self.month_sql()}"])


def write_parts(con: duckdb.DuckDBPyConnection, relation: str, model: str, grouping: Grouping,
                versions: Mapping[str, str], root: Path, build_id: str) -> list[Part]:
    """Write the rows of ``relation`` (one model, computed for the groups in ``versions``)
    as one part per group; returns the parts, empty groups included.

    DuckDB computes ``relation`` (a view: the model's SQL) and writes every group in one
    pass, straight into its folder, under a name of this build's
    (``part-<build id>_0.parquet``) that no other build uses; the rows per file come back
    from the same statement. A row outside the groups it was computed for is an error (its
    file is removed again).
    """
    folder = root / model
    folder.mkdir(parents=True, exist_ok=True)
    written = con.execute(
        f"copy (select *, {grouping.month_sql()} as {GROUP_KEY} from {relation}) "
        f"to '{sql_path(folder)}' (format parquet, partition_by "
        f"({', '.join([*grouping.keys[:-1], GROUP_KEY])}), write_partition_columns true, "
        f"overwrite_or_ignore true, filename_pattern 'part-{build_id}_{{i}}', "
        f"return_stats true)").fetchall()
    files: dict[str, tuple[str, int]] = {}
    for filename, rows, *_ in written:
        group = str(Path(filename).parent.relative_to(folder))
        if group in files:
            raise ValueError(f"model {model}: DuckDB wrote two files for {group}")
        files[group] = (filename, rows)
    outside = sorted(set(files) - set(versions))
    if outside:
        for group in outside:
            Path(files[group][0]).unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # its folder, unless a build uses it
                Path(files[group][0]).parent.rmdir()
        raise ValueError(f"model {model} has rows outside the partitions it was built for: "
                         f"{', '.join(outside[:3])}")
    return [Part(model, group, version, *files.get(group, (None, 0)))
            for group, version in versions.items()]


def sql_path(path: Path | str) -> str:
    """A path as the content of a SQL string literal (its quotes doubled)."""
    return str(path).replace("'", "''")


def remove_unused_parts(root: Path, folders: Mapping[str, Iterable[str]],
                        kept: Iterable[str], expired: Iterable[str]) -> int:
    """Delete, after the switch and under the build lock: the parts in the folders this
    build wrote (model -> groups) that the new warehouse does not keep (left by a killed
    build), and the ``expired`` replaced parts; returns how many. Only folders a build
    wrote can hold such parts, so the history is not walked."""
    keep = set(kept)
    removed = 0
    for model, groups in folders.items():
        for group in groups:
            for path in (root / model / group).glob("*.parquet"):
                if str(path) not in keep:
                    path.unlink(missing_ok=True)
                    removed += 1
    for file in expired:
        if file not in keep:
            Path(file).unlink(missing_ok=True)
            removed += 1
    return removed


def carry_replaced(previous: Manifest, new_parts: Mapping[tuple[str, str], Part],
                   now: float | None = None) -> dict[str, float]:
    """The replaced parts a new manifest keeps: those of the previous manifest still young
    enough, and the previous parts this build replaces (from now on)."""
    now = time.time() if now is None else now
    kept = {f: t for f, t in previous.replaced.items() if now - t < REPLACED_PART_SECONDS}
    live = {p.file for p in new_parts.values() if p.file}
    for part in previous.parts.values():
        if part.file and part.file not in live:
            kept.setdefault(part.file, now)
    return kept
