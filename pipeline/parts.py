"""Partitioned models: their rows kept as Parquet parts, one per model and lake partition.

A model marked ``-- materialized: partitioned`` has the grain of one lake area's
partitions (revenue: a location's business date). Each build computes it only for the
partitions whose input changed and writes one part per partition,
``<warehouse>_parts/<model>/<partition>/part-<version>.parquet``; the warehouse file holds
a view over the parts of its build. A part's version is a hash of everything its rows
derive from: the partition's committed load, the receipts other partitions took over from
it, and the SQL of the model and of the models it reads (and the macros). A part whose
version is unchanged is kept, so a night's build costs what changed, not the history.

The manifest (which part each model and partition has, its version and rows) is a table
of the warehouse file itself, so it is switched in with it, atomically. Parts are never
overwritten: a part replaced by a build stays on disk for ``REPLACED_PART_SECONDS``, so a
reader that opened the previous warehouse keeps reading a complete old state; parts that
no warehouse names (written by a build that was killed) are removed by the next build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
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
    """One model's rows of one lake partition (``file`` None: the partition has none)."""

    model: str
    partition: str
    version: str
    file: str | None
    rows: int


@dataclass
class Manifest:
    """Every part of a warehouse and the parts it replaced (with when)."""

    parts: dict[tuple[str, str], Part] = field(default_factory=dict)
    replaced: dict[str, float] = field(default_factory=dict)
    check_failures: dict[tuple[str, str], int] = field(default_factory=dict)
    """(check, partition) -> failing rows, of the checks that run on the parts built."""

    @classmethod
    def read(cls, warehouse_path: Path) -> Manifest:
        """The manifest of the warehouse file in place; empty (a full build) when there is
        none or it cannot be read."""
        if not warehouse_path.exists():
            return cls()
        try:
            with duckdb.connect(str(warehouse_path), read_only=True) as con:
                parts = con.execute(f"select model, partition, version, file, rows "
                                    f"from {STATE_SCHEMA}.parts").fetchall()
                replaced = con.execute(f"select file, replaced_at "
                                       f"from {STATE_SCHEMA}.replaced_parts").fetchall()
                failures = con.execute(f"select check_name, partition, failing_rows "
                                       f"from {STATE_SCHEMA}.check_failures").fetchall()
        except duckdb.Error:
            return cls()
        manifest = cls({(p[0], p[1]): Part(*p) for p in parts}, dict(replaced),
                       {(f[0], f[1]): f[2] for f in failures})
        # A part deleted by hand is built again.
        manifest.parts = {k: p for k, p in manifest.parts.items()
                          if p.file is None or Path(p.file).exists()}
        return manifest

    def current(self, model: str, partition: str, version: str) -> bool:
        part = self.parts.get((model, partition))
        return part is not None and part.version == version

    def files(self, model: str) -> list[str]:
        return sorted(p.file for (m, _), p in self.parts.items() if m == model and p.file)

    def rows(self, model: str) -> int:
        return sum(p.rows for (m, _), p in self.parts.items() if m == model)

    def write(self, con: duckdb.DuckDBPyConnection) -> None:
        """Store the manifest in the warehouse being built."""
        con.execute(f"create schema if not exists {STATE_SCHEMA}")
        arrow_insert(con, f"{STATE_SCHEMA}.parts",
                     [(p.model, p.partition, p.version, p.file, p.rows)
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


PARTS_SCHEMA = pa.schema([("model", pa.string()), ("partition", pa.string()),
                          ("version", pa.string()), ("file", pa.string()), ("rows", pa.int64())])
REPLACED_SCHEMA = pa.schema([("file", pa.string()), ("replaced_at", pa.float64())])
FAILURES_SCHEMA = pa.schema([("check_name", pa.string()), ("partition", pa.string()),
                             ("failing_rows", pa.int64())])


def write_parts(con: duckdb.DuckDBPyConnection, relation: str, model: str, keys: list[str],
                versions: Mapping[str, str], root: Path) -> list[Part]:
    """Write the rows of ``relation`` (one model, computed for the partitions in
    ``versions``) as one part per partition; returns the parts, empty partitions included.

    DuckDB writes every partition in one pass; each file is then renamed to its final,
    versioned name. A row outside the partitions it was computed for is an error.
    """
    staging = root / f".staging-{uuid.uuid4().hex}"
    parts: list[Part] = []
    try:
        counts = dict(con.execute(
            f"select {partition_expr(keys)}, count(*) from {relation} group by all").fetchall())
        outside = sorted(set(counts) - set(versions))
        if outside:
            raise ValueError(f"model {model} has rows outside the partitions it was built "
                             f"for: {', '.join(outside[:3])}")
        if counts:
            root.mkdir(parents=True, exist_ok=True)
            con.execute(f"copy {relation} to '{_sql_str(staging)}' (format parquet, "
                        f"partition_by ({', '.join(keys)}), write_partition_columns true, "
                        "filename_pattern 'part_{i}')")
        for partition, version in versions.items():
            file = None
            if counts.get(partition):
                (written,) = (staging / partition).glob("*.parquet")
                target = root / model / partition / f"part-{version}.parquet"
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(written, target)
                file = str(target)
            parts.append(Part(model, partition, version, file, counts.get(partition, 0)))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return parts


def _sql_str(path: Path) -> str:
    return str(path.resolve()).replace("'", "''")


def remove_unused_parts(root: Path, folders: Mapping[str, Iterable[str]],
                        kept: Iterable[str], expired: Iterable[str]) -> int:
    """Delete, after the switch and under the build lock: the parts in the folders this
    build wrote (model -> partitions) that the new warehouse does not keep (left by a
    killed build or replaced long ago), and the ``expired`` replaced parts; returns how
    many. Only folders a build wrote can hold such parts, so the history is not walked."""
    keep = set(kept)
    removed = 0
    for model, partitions in folders.items():
        for partition in partitions:
            for path in (root / model / partition).glob("*.parquet"):
                if str(path) not in keep:
                    path.unlink(missing_ok=True)
                    removed += 1
    for file in expired:
        if file not in keep:
            Path(file).unlink(missing_ok=True)
            removed += 1
    for staging in root.glob(".staging-*"):
        shutil.rmtree(staging, ignore_errors=True)
    return removed


def partition_expr(keys: list[str]) -> str:
    """The partition's folder path (``location_id=1001/business_date=2026-11-20``) as SQL."""
    return " || '/' || ".join(f"'{k}=' || cast({k} as varchar)" for k in keys)


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
