"""The lake: one Delta table per area, Delta's log the only commit.

Each area (``pipeline.areas``: revenue, catalog, menu, vouchers, drift, ledger,
exports) is one Delta table, ``<lake>/<area>``: a row per partition (a location's
business date, a location's snapshot of a day, a closed period, ...) holding the
partition's tables nested as lists, and its load (``pipeline.lake.areatable``). A
partition's tables are therefore replaced together, all new or all old, for every reader
of the table, ours and every other engine's: there is nothing beside the Delta log to
commit, publish or keep in step.

A load commits partitions in batches (``write_batch``: one Delta commit, one file per
date of the batch); a single partition (a drift finding, a closed period) is a batch of
one (``write``). Readers pin a version (``snapshot``): the warehouse records the version
it built from.

``Lake`` is a local folder; ``pipeline.lake.objectlake.ObjectLake`` is the same on S3.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

from pipeline.core.outcomes import ConfigError
from pipeline.lake.areatable import AreaTable, Committed
from pipeline.lake.layout import (
    Layout,
    LoadRecord,
    Replacement,
    layout_of_table,
    parse_partition,
    partition_path,
)
from pipeline.lake.log_check import unreadable
from pipeline.lake.snapshot import AreaSnapshot
from pipeline.lake.source_mark import MARK, SourceMark, check_mark

__all__ = ["Committed", "Lake", "LakeStore", "LoadRecord", "Replacement", "parse_partition",
           "partition_path", "layout_of", "layout_of_table"]


MARK_ROUNDS = 5
"""Rounds of reading and writing the source mark before a write (others may write it)."""


def _key_type(key: str, value: object, tables: Mapping[str, pa.Table]) -> pa.DataType:
    """A partition key's type: as the area's tables have the column, else by its value
    (an ISO date is a date)."""
    for table in tables.values():
        if key in table.schema.names:
            return table.schema.field(key).type
    if isinstance(value, bool):
        return pa.string()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, date):
        return pa.date32()
    try:
        date.fromisoformat(str(value))
        return pa.date32() if len(str(value)) == 10 else pa.string()
    except ValueError:
        return pa.string()


def layout_of(tables: Mapping[str, pa.Table], partition: Mapping[str, object]) -> Layout:
    """The layout of an area written with ``tables`` and keys like ``partition``."""
    return Layout({k: _key_type(k, v, tables) for k, v in partition.items()},
                  {name: t.schema for name, t in tables.items()})


class LakeStore(Protocol):
    """What the pipeline asks of a lake, wherever it is (``Lake``, ``ObjectLake``)."""

    storage_options: dict[str, str] | None
    """delta-rs' settings for ``table_uri`` (None: a local path)."""

    def describe(self, table: str | None = None) -> str:
        """Where the lake (or one area's table) is, for people."""

    def areas(self) -> list[str]:
        """The areas with a table."""

    def table_uri(self, area: str) -> str:
        """Where an area's Delta table is."""

    def area_table(self, area: str) -> AreaTable | None:
        """The area's table (None: nothing written yet)."""

    def write(self, area: str, tables: Mapping[str, pa.Table],
              partition: Mapping[str, object],
              metadata: Mapping[str, object] | None = None) -> Committed:
        """Replace one partition of an area by one commit: the table's new version (and
        what another writer had committed of it meanwhile, ``Committed.overtook``)."""

    def write_batch(self, area: str, batch: Sequence[Replacement]) -> Committed:
        """Replace the batch's partitions of an area by one commit: the new version, and
        the partitions another writer had committed meanwhile (replaced)."""

    def records(self, area: str, partitions: Sequence[Mapping[str, object]] | None = None
                ) -> dict[str, LoadRecord]:
        """partition path -> its load, of ``partitions`` (None: all), at the newest version."""

    def committed(self, area: str, partition: Mapping[str, object]) -> LoadRecord | None:
        """The partition's load, or None if it was never committed."""

    def has(self, area: str, partition: Mapping[str, object]) -> bool:
        """Is the partition committed?"""

    def partitions(self, area: str) -> list[dict[str, str]]:
        """Every committed partition of ``area``."""

    def read(self, area: str, table: str, partition: Mapping[str, object]) -> pa.Table:
        """A committed partition's table."""


class DeltaAreas:
    """What ``Lake`` and ``ObjectLake`` share: the areas as ``AreaTable`` objects, and the
    source they hold (``pipeline.lake.source_mark``)."""

    storage_options: dict[str, str] | None = None
    source: SourceMark | None = None
    """The source this process writes from: every write checks the lake holds its data
    (None: not checked, a lake opened by hand)."""

    @property
    def _tables(self) -> dict[str, AreaTable]:
        return self.__dict__.setdefault("_area_tables", {})

    def table_uri(self, area: str) -> str:
        raise NotImplementedError

    def _filesystem(self) -> tuple[pafs.FileSystem, str]:
        """pyarrow's filesystem and the lake's root in it."""
        raise NotImplementedError

    def _table(self, area: str, layout: Layout) -> AreaTable:
        fs, root = self._filesystem()
        return AreaTable(self.table_uri(area), layout, fs, f"{root}/{area}",
                         self.storage_options)

    def area_table(self, area: str) -> AreaTable | None:
        return self._area(area)

    def _area(self, area: str, tables: Mapping[str, pa.Table] | None = None,
              partition: Mapping[str, object] | None = None) -> AreaTable | None:
        found = self._tables.get(area)
        if found is not None:
            return found
        try:
            delta = DeltaTable(self.table_uri(area), storage_options=self.storage_options)
            layout = layout_of_table(delta)
        except Exception as exc:  # noqa: BLE001 (no table yet: delta-rs' TableNotFoundError)
            if not isinstance(exc, TableNotFoundError):
                fs, root = self._filesystem()
                broken = unreadable(fs, f"{root}/{area}", self.describe(area), exc)
                if broken is not None:  # a log that is there and cannot be read: by name
                    raise broken from None
            if tables is None or partition is None:
                return None
            layout = layout_of(tables, partition)
        self._tables[area] = self._table(area, layout)
        return self._tables[area]

    def write(self, area: str, tables: Mapping[str, pa.Table],
              partition: Mapping[str, object],
              metadata: Mapping[str, object] | None = None) -> Committed:
        return self.write_batch(area, [Replacement(partition, tables, metadata)])

    def write_batch(self, area: str, batch: Sequence[Replacement]) -> Committed:
        located = [int(r.partition["location_id"]) for r in batch
                   if "location_id" in r.partition]
        if located:  # a location's data (not a closed period's, an export's record)
            self.claim(located)
        table = self._area(area, batch[0].tables, batch[0].partition)
        table.evolve(layout_of(batch[0].tables, batch[0].partition))
        return table.commit(batch)

    def claim(self, locations: Iterable[int] = (), moved: bool = False) -> None:
        """Before a write: ``ForeignLake`` if the lake holds another source's data (unless
        ``moved``), else its mark records this source and ``locations``."""
        if self.source is None:
            return
        wanted = self.source.with_locations(locations)
        known = self.__dict__.get("_mark")
        if not moved and known is not None and known.source == wanted.source and \
                set(wanted.locations) <= set(known.locations):
            return
        fs, root = self._filesystem()
        path = f"{root}/{MARK}"
        # Read, merge, write, read again: loads of other locations writing the mark at
        # the same moment (the shares of a night) each add theirs until it holds all.
        for _ in range(MARK_ROUNDS):
            found = self._read_mark(fs, path)
            mark = check_mark(found, wanted, self.describe(), moved)
            if mark is None:
                break
            self._write_mark(fs, path, mark.to_json().encode())
            moved = False  # recorded: the next round checks it as any write would
        self.__dict__["_mark"] = mark or found

    @staticmethod
    def _read_mark(fs: pafs.FileSystem, path: str) -> SourceMark | None:
        """The lake's mark (None: none yet). One that does not read as a mark is read
        again twice, a moment apart, before it is refused: a store that showed another
        writer's mark half-written (seen with moto's S3 under four writers at once)."""
        for attempt in range(3):
            try:
                with fs.open_input_file(path) as fh:
                    return SourceMark.from_json(fh.read().decode("utf-8", "replace"), path)
            except FileNotFoundError:
                return None
            except ConfigError:
                if attempt == 2:
                    raise
                time.sleep(0.2 * (attempt + 1))
        return None

    @staticmethod
    def _write_mark(fs: pafs.FileSystem, path: str, data: bytes) -> None:
        if isinstance(fs, pafs.LocalFileSystem):  # whole or not at all
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            staged = Path(f"{path}.{os.getpid()}.tmp")
            staged.write_bytes(data)
            os.replace(staged, path)
            return
        with fs.open_output_stream(path) as out:
            out.write(data)

    def snapshot(self, area: str, version: int | None = None) -> AreaSnapshot | None:
        table = self.area_table(area)
        return None if table is None else table.snapshot(version)

    def records(self, area: str, partitions: Sequence[Mapping[str, object]] | None = None
                ) -> dict[str, LoadRecord]:
        snapshot = self.snapshot(area)
        return {} if snapshot is None else snapshot.records(partitions)

    def committed(self, area: str, partition: Mapping[str, object]) -> LoadRecord | None:
        return self.records(area, [partition]).get(
            partition_path({k: as_text(v) for k, v in partition.items()}))

    def has(self, area: str, partition: Mapping[str, object]) -> bool:
        return self.committed(area, partition) is not None

    def partitions(self, area: str) -> list[dict[str, str]]:
        return [parse_partition(p) for p in sorted(self.records(area))]

    def read(self, area: str, table: str, partition: Mapping[str, object]) -> pa.Table:
        snapshot = self.snapshot(area)
        if snapshot is None:
            raise FileNotFoundError(f"no committed {table} in {area} partition {partition}")
        return snapshot.read(table, partition)


def as_text(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


@dataclass(frozen=True)
class Lake(DeltaAreas):
    """The lake in a local folder (a ``LakeStore``)."""

    root: Path
    source: SourceMark | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    def describe(self, table: str | None = None) -> str:
        return str(self.root / table) if table else str(self.root)

    def table_uri(self, area: str) -> str:
        return str(self.root.absolute() / area)

    def _filesystem(self) -> tuple[pafs.FileSystem, str]:
        return pafs.LocalFileSystem(), str(self.root.absolute())

    def areas(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir()
                      if (p / "_delta_log").is_dir()) if self.root.is_dir() else []

    def delta_tables(self) -> list[str]:
        return self.areas()
