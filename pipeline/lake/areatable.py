"""An area's Delta table: a row per partition, its tables nested in it, Delta the only commit.

An area (``pipeline.load.areas``: revenue, a catalog snapshot, the ledger, ...) writes
several tables per partition (revenue: a location's receipts, lines, side dishes and
payments of one business date) that must be replaced together, all new or all old, for
every reader. Here that is one row: the partition's keys, its load (``load_id``,
``loaded_at``, ``metadata`` as JSON), and one ``list<struct>`` column per table holding
that table's rows. A row is atomic in any engine, so a Delta commit of rows is all the
commit there is: no records beside the table, nothing to publish afterwards.

Files follow loads, not partitions. The table is partitioned by its date key (the
business or snapshot date; ``period`` and ``export_id`` where an area has no date), and a
commit writes one file per date for all the partitions of its batch, sorted by the other
keys, with statistics (each file's range of ``location_id``) and every page's CRC. A
partition is replaced by a predicate overwrite: the files of its date that hold it are
removed in the same commit, and their rows of other partitions are written again into the
commit's file of that date (copy on write). A night of 200 locations writes a file per
date; a reload of one location rewrites the files of its dates.

Commits are Delta's (optimistic concurrency): a commit that lost to another writer
(``CommitFailedError``: both removed one file) reads the new snapshot and writes again.
Two writers of different partitions therefore both commit. Two that both add the first
row of one partition at once (no file to remove, so no conflict) leave two rows; readers
take the newest ``load_id`` per partition (``AreaSnapshot.records``), and the partition's
next commit removes both.

A snapshot (``AreaSnapshot``) is the table at one version: what a reader pins.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, CommitProperties, RemoveAction

LOAD_COLUMNS = ("load_id", "loaded_at", "metadata")
"""Beside the keys and the nested tables, in every row: which load wrote it, when, and
its metadata (JSON object of strings: counts, turnover, ...)."""
ATTEMPTS = 8
"""How often a commit is written again after losing to another writer."""
APP_ID = "pos-etl"
"""In the ``commitInfo`` of our commits: who wrote them."""
ROWS_PER_GROUP = 16
"""Partitions per Parquet row group: a build that reads one location's day skips the
rest of its date's file by the groups' statistics."""
PARQUET_OPTIONS = {"compression": "zstd", "use_dictionary": False, "write_statistics": True,
                   "write_page_checksum": True, "row_group_size": ROWS_PER_GROUP}
"""How the files are written: zstd (a year of one location's days: 215 bytes a receipt,
0.65x the earlier lake's snappy files; dictionaries saved 0.7 % more and cost a third
more time), with statistics, and every page with its CRC (a build verifies them: a
flipped bit fails it by name)."""


def new_load_id(now: datetime | None = None) -> str:
    """A unique id that sorts by load time: ``20261123T131750123456Z-1a2b3c4d``."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%S%fZ}-{uuid.uuid4().hex[:8]}"


def partition_path(partition: Mapping[str, object]) -> str:
    """A partition as ``location_id=1001/business_date=2026-11-20``: its name in the
    warehouse's bookkeeping and in messages (``parse_partition`` reads it back)."""
    return "/".join(f"{key}={value}" for key, value in partition.items())


def parse_partition(path: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in path.split("/"))


@dataclass(frozen=True)
class Replacement:
    """One partition's new content: its tables and metadata."""

    partition: Mapping[str, object]
    tables: Mapping[str, pa.Table]
    metadata: Mapping[str, object] | None = None
    load: tuple[str, datetime] | None = None
    """Its load id and time when it keeps an earlier load's (a converted lake); else the
    commit's."""


@dataclass(frozen=True)
class LoadRecord:
    """What a partition's row says of its load."""

    load_id: str
    loaded_at: datetime
    tables: list[str]
    metadata: dict[str, str]


@dataclass(frozen=True)
class Layout:
    """An area's table: its partition keys and their types, and its tables' columns."""

    keys: Mapping[str, pa.DataType]
    tables: Mapping[str, pa.Schema]
    date_key: str = ""
    """The Delta partition column: the date key (default: the first key of type date,
    else the last key)."""

    def __post_init__(self) -> None:
        if not self.date_key:
            dates = [k for k, t in self.keys.items() if pa.types.is_date(t)]
            object.__setattr__(self, "date_key", dates[0] if dates else list(self.keys)[-1])

    @property
    def sort_keys(self) -> list[str]:
        return [k for k in self.keys if k != self.date_key]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(
            [pa.field(k, t, nullable=False) for k, t in self.keys.items()]
            + [pa.field("load_id", pa.string(), False),
               pa.field("loaded_at", pa.timestamp("us", tz="UTC"), False),
               pa.field("metadata", pa.string(), False)]
            + [pa.field(name, pa.list_(pa.struct(list(self.nested(name)))), nullable=False)
               for name in self.tables])

    def nested(self, table: str) -> pa.Schema:
        """A table's columns as nested in a row: without the keys (the row has them),
        timestamps in microseconds (Delta has no other unit)."""
        schema = self.tables[table]
        return pa.schema([f.with_type(_delta_type(f.type)).remove_metadata()
                          for f in schema if f.name not in self.keys])

    def rows(self, batch: Sequence[Replacement], load_id: str, loaded_at: datetime) -> pa.Table:
        """The batch as rows of the table (one per partition)."""
        columns: dict[str, list] = {name: [] for name in self.schema.names}
        for item in batch:
            for key, kind in self.keys.items():
                columns[key].append(_typed(item.partition[key], kind))
            columns["load_id"].append(item.load[0] if item.load else load_id)
            columns["loaded_at"].append(item.load[1] if item.load else loaded_at)
            columns["metadata"].append(json.dumps(
                {k: str(v) for k, v in (item.metadata or {}).items()}))
        arrays = [pa.array(columns[k], t) for k, t in self.keys.items()]
        arrays += [pa.array(columns["load_id"], pa.string()),
                   pa.array(columns["loaded_at"], pa.timestamp("us", tz="UTC")),
                   pa.array(columns["metadata"], pa.string())]
        for name in self.tables:
            arrays.append(_nested([item.tables[name] for item in batch], self.nested(name)))
        return pa.Table.from_arrays(arrays, schema=self.schema)


DESCRIPTION = "pos-etl lake area: a row per partition; partition keys: "
"""The table's Delta description: it names the partition keys in their order (Delta
keeps no order of its own: a schema merge moves the partition column last)."""


def layout_of_table(table: DeltaTable) -> Layout:
    """The layout of an existing area table, from its Delta schema and description."""
    schema = pa.schema(table.schema().to_arrow())
    description = table.metadata().description or ""
    names = description.removeprefix(DESCRIPTION).split(",") \
        if description.startswith(DESCRIPTION) else [
            f.name for f in schema if f.name not in LOAD_COLUMNS
            and not pa.types.is_list(f.type)]
    keys = {name: schema.field(name).type for name in names}
    tables = {f.name: pa.schema([*(pa.field(k, t, False) for k, t in keys.items()),
                                 *f.type.value_type])
              for f in schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)}
    return Layout(keys, tables, date_key=table.metadata().partition_columns[0])


def _conform(column: pa.ChunkedArray | pa.Array, kind: pa.DataType) -> pa.Array:
    """A column of an older file as the table's type now: fields it lacks (a struct's,
    nested in lists too) null."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.type == kind:
        return column
    if pa.types.is_list(kind) and pa.types.is_list(column.type):
        values = _conform(column.values if column.offset == 0 else column.flatten(),
                          kind.value_type)
        offsets = column.offsets
        if column.offset:
            offsets = pc.subtract(offsets, offsets[0])
        return pa.ListArray.from_arrays(offsets, values, type=kind,
                                        mask=column.is_null() if column.null_count else None)
    if pa.types.is_struct(kind) and pa.types.is_struct(column.type):
        have = {column.type.field(i).name: column.field(i)
                for i in range(column.type.num_fields)}
        arrays = [_conform(have[f.name], f.type) if f.name in have
                  else pa.nulls(len(column), f.type) for f in kind]
        return pa.StructArray.from_arrays(arrays, fields=list(kind),
                                          mask=column.is_null() if column.null_count else None)
    return column.cast(kind)


def _covers(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of type ``have`` holds every field of ``want`` (nested too)."""
    if pa.types.is_list(have) and pa.types.is_list(want):
        return _covers(have.value_type, want.value_type)
    if pa.types.is_struct(have) and pa.types.is_struct(want):
        fields = {f.name: f.type for f in have}
        return all(f.name in fields and _covers(fields[f.name], f.type) for f in want)
    return True


def _delta_type(kind: pa.DataType) -> pa.DataType:
    return pa.timestamp("us", kind.tz) if pa.types.is_timestamp(kind) else kind


def _nested(tables: list[pa.Table], schema: pa.Schema) -> pa.Array:
    """Each table as one list value of structs (its rows), in order (a column a table
    lacks is null in its rows)."""
    names = schema.names
    try:  # the usual case: every table of one schema, cast once
        flat = pa.concat_tables([t.select(names) for t in tables]).cast(schema)
    except (KeyError, pa.ArrowInvalid):
        flat = pa.concat_tables([pa.Table.from_arrays(
            [t.column(f.name).cast(f.type) if f.name in t.column_names
             else pa.nulls(t.num_rows, f.type) for f in schema], schema=schema)
            for t in tables])
    offsets = pa.array([0, *_cumulative(t.num_rows for t in tables)], pa.int32())
    structs = pa.StructArray.from_arrays(
        [flat.column(i).combine_chunks() for i in range(flat.num_columns)],
        fields=list(schema)) if flat.num_rows else pa.array([], pa.struct(list(schema)))
    return pa.ListArray.from_arrays(offsets, structs, type=pa.list_(pa.struct(list(schema))))


def _cumulative(values: Iterable[int]) -> list[int]:
    total, out = 0, []
    for v in values:
        total += v
        out.append(total)
    return out


@dataclass
class AreaTable:
    """One area's Delta table at ``uri`` (a local path or ``s3://bucket/prefix/name``);
    ``filesystem`` and ``root`` are where its files are for pyarrow."""

    uri: str
    layout: Layout
    filesystem: pafs.FileSystem = field(default_factory=pafs.LocalFileSystem)
    root: str = ""
    storage_options: dict[str, str] | None = None
    _table: DeltaTable | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    """One commit or snapshot at a time per process (threads share the ``DeltaTable``)."""

    def __post_init__(self) -> None:
        self.root = (self.root or self.uri).rstrip("/")

    # --- reading ------------------------------------------------------------------

    def open(self, version: int | None = None) -> DeltaTable | None:
        """The Delta table (at ``version``, else the newest), None if it has no log yet."""
        with self._lock:
            return self._open(version)

    def _open(self, version: int | None) -> DeltaTable | None:
        if version is None and self._table is not None:
            try:
                self._table.update_incremental()
                return self._table
            except DeltaError:
                self._table = None
        try:
            table = DeltaTable(self.uri, version=version, storage_options=self.storage_options)
        except TableNotFoundError:
            return None
        if version is None:
            self._table = table
        return table

    def snapshot(self, version: int | None = None) -> AreaSnapshot:
        """The table at ``version`` (else the newest): what a reader pins."""
        with self._lock:
            table = self._open(version)
            if table is None:
                return AreaSnapshot(self, None, None)
            return AreaSnapshot(self, table.version(),
                                pa.table(table.get_add_actions(flatten=True)))

    # --- writing ------------------------------------------------------------------

    def commit(self, batch: Sequence[Replacement], operation: str = "WRITE",
               load_id: str | None = None) -> int:
        """Replace the batch's partitions in one Delta commit; returns its version. Rows
        of other partitions in the files this removes are written again."""
        if not batch:
            raise ValueError("an empty batch")
        with self._lock:
            return self._commit(batch, operation, load_id)

    def _commit(self, batch: Sequence[Replacement], operation: str,
                load_id: str | None) -> int:
        load_id = load_id or new_load_id()
        rows = self.layout.rows(batch, load_id, datetime.now(UTC))
        replaced = _partition_set(rows, list(self.layout.keys))
        for attempt in range(ATTEMPTS):
            table = self.open()
            if table is None:
                table = self._create()
            removed, kept = self._displaced(table, rows, replaced)
            written = self._write_files(pa.concat_tables([rows, *kept]) if kept else rows,
                                        load_id)
            actions: list[AddAction | RemoveAction] = [*removed, *written]
            try:
                self._commit_actions(table, actions, load_id, operation, len(replaced))
            except CommitFailedError:
                self._delete([a.path for a in written])  # never committed: nobody reads them
                self._table = None
                time.sleep(random.uniform(0.01, 0.05) * 2 ** min(attempt, 5))
                continue
            except BaseException:
                # (its files stay: whether the commit landed is not known here; if not,
                # no version names them and housekeeping's vacuum deletes them)
                self._table = None
                raise
            return table.version()
        raise CommitFailedError(f"{self.uri}: {ATTEMPTS} commits in a row lost to other "
                                f"writers")

    def _commit_actions(self, table: DeltaTable, actions: list, load_id: str,
                        operation: str, replaced: int) -> None:
        table.create_write_transaction(
            actions, mode="append", schema=DeltaSchema.from_arrow(self.layout.schema),
            partition_by=[self.layout.date_key],
            commit_properties=CommitProperties(custom_metadata={
                "engineApp": APP_ID, "posEtlLoad": load_id, "posEtlOperation": operation,
                "partitionsReplaced": replaced}))

    def evolve(self, incoming: Layout) -> None:
        """Add to the table the columns ``incoming`` has and it lacks (a new field of a
        table: older rows answer it as null), by an empty commit that merges the schemas;
        the layout is then the table's."""
        with self._lock:
            wanted = incoming.schema
            have = self.layout.schema
            if all(_covers(have.field(f.name).type, f.type) if f.name in have.names
                   else False for f in wanted):
                return
            write_deltalake(self.uri, wanted.empty_table(), mode="append",
                            schema_mode="merge", partition_by=[self.layout.date_key],
                            storage_options=self.storage_options)
            self._table = None
            self.layout = layout_of_table(self._open(None))

    def compact(self, dates_per_commit: int = 64) -> int:
        """Rewrite every date held in more than one file as one file (rows sorted, with
        statistics and page CRCs, as a commit writes them); returns the dates compacted.
        (Not delta-rs' ``optimize.compact``: its files have no page CRCs to verify.)"""
        compacted = 0
        for _attempt in range(ATTEMPTS):
            table = self.open()
            if table is None:
                return compacted
            adds = pa.table(table.get_add_actions(flatten=True))
            column = f"partition.{self.layout.date_key}"
            counts = adds.group_by(column).aggregate([("path", "count")])
            crowded = counts.filter(pc.greater(counts.column("path_count"), 1)).column(
                column).to_pylist()
            if not crowded:
                return compacted
            for start in range(0, len(crowded), dates_per_commit):
                dates = crowded[start:start + dates_per_commit]
                chosen = adds.filter(pc.is_in(adds.column(column),
                                              value_set=pa.array(dates, adds.schema.field(
                                                  column).type)))
                now = int(time.time() * 1000)
                removed = [RemoveAction(r["path"], True, now, r["size_bytes"],
                                        {self.layout.date_key: _text(r[column])})
                           for r in chosen.to_pylist()]
                rows = pa.concat_tables([
                    self.read_file(path).select(self.layout.schema.names)
                    .cast(self.layout.schema) for path in chosen.column("path").to_pylist()])
                load_id = new_load_id()
                written = self._write_files(rows, load_id)
                try:
                    table.create_write_transaction(
                        [*removed, *written], mode="append",
                        schema=DeltaSchema.from_arrow(self.layout.schema),
                        partition_by=[self.layout.date_key],
                        commit_properties=CommitProperties(custom_metadata={
                            "engineApp": APP_ID, "posEtlOperation": "COMPACT",
                            "datesCompacted": len(dates)}))
                except CommitFailedError:  # a load committed meanwhile: look again
                    self._delete([a.path for a in written])
                    self._table = None
                    break
                compacted += len(dates)
                table = self.open()
            else:
                return compacted
        return compacted

    def _create(self) -> DeltaTable:
        try:
            return DeltaTable.create(
                self.uri, DeltaSchema.from_arrow(self.layout.schema),
                partition_by=[self.layout.date_key], mode="error",
                name=self.uri.rstrip("/").rsplit("/", 1)[-1],
                description=f"{DESCRIPTION}{','.join(self.layout.keys)}",
                storage_options=self.storage_options)
        except DeltaError:  # another writer created it first
            table = self.open()
            if table is None:
                raise
            return table

    def _displaced(self, table: DeltaTable, rows: pa.Table, replaced: set[tuple]
                   ) -> tuple[list[RemoveAction], list[pa.Table]]:
        """The files of the batch's dates that hold a partition it replaces (removed), and
        their rows of other partitions (written again)."""
        date_key = self.layout.date_key
        dates = pc.unique(rows.column(date_key)).to_pylist()
        adds = pa.table(table.get_add_actions(flatten=True))
        if not adds.num_rows:
            return [], []
        mask = pc.is_in(adds.column(f"partition.{date_key}"),
                        value_set=pa.array(dates, self.layout.keys[date_key]))
        candidates = adds.filter(mask)
        for key in self.layout.sort_keys:  # the files' ranges: skip the disjoint ones
            low, high = f"min.{key}", f"max.{key}"
            if low in candidates.column_names and pa.types.is_integer(self.layout.keys[key]):
                values = rows.column(key)
                lo, hi = pc.min(values).as_py(), pc.max(values).as_py()
                keep = pc.or_kleene(pc.is_null(candidates.column(low)), pc.and_(
                    pc.less_equal(candidates.column(low), hi),
                    pc.greater_equal(candidates.column(high), lo)))
                candidates = candidates.filter(keep)
        removed, kept = [], []
        now = int(time.time() * 1000)
        keys = list(self.layout.keys)
        for row in candidates.to_pylist():
            path = row["path"]
            held = self.read_file(path, keys)
            mine = pa.array([tuple(r.values()) in replaced for r in held.to_pylist()],
                            pa.bool_())
            if not pc.any(mine).as_py():
                continue
            removed.append(RemoveAction(path, True, now, row["size_bytes"],
                                        {date_key: _text(row[f"partition.{date_key}"])}))
            if not pc.all(mine).as_py():
                others = self.read_file(path).filter(pc.invert(mine))
                kept.append(others.select(self.layout.schema.names).cast(self.layout.schema))
        return removed, kept

    def read_file(self, path: str, columns: list[str] | None = None) -> pa.Table:
        stored = None if columns is None else [c for c in columns if c != self.layout.date_key]
        table = pq.ParquetFile(self.filesystem.open_input_file(f"{self.root}/{path}"),
                               page_checksum_verification=True).read(stored)
        if columns is None or self.layout.date_key in columns:  # not stored in the file
            value = parse_partition(path.rsplit("/", 1)[0])[self.layout.date_key]
            table = _with_date(table, self.layout, value)
        schema = self.layout.schema
        table = pa.table({name: _conform(table.column(name), schema.field(name).type)
                          if name in schema.names else table.column(name)
                          for name in table.column_names})
        return table.select(columns) if columns else table

    def _write_files(self, rows: pa.Table, load_id: str) -> list[AddAction]:
        """One file per date, its rows sorted by the other keys."""
        date_key = self.layout.date_key
        order = [(k, "ascending") for k in [date_key, *self.layout.sort_keys]]
        rows = rows.sort_by(order)
        stored = rows.drop_columns([date_key])  # Delta's partition column: in the path
        actions = []
        dates = rows.column(date_key)
        for n, value in enumerate(pc.unique(dates).to_pylist()):
            part = stored.filter(pc.equal(dates, pa.scalar(value, dates.type)))
            rel = f"{date_key}={_text(value)}/part-{load_id}-{n:04d}.parquet"
            sink = pa.BufferOutputStream()
            pq.write_table(part, sink, **PARQUET_OPTIONS)
            data = sink.getvalue()
            self._put(rel, data)
            actions.append(AddAction(rel, data.size, {date_key: _text(value)},
                                     int(time.time() * 1000), True,
                                     json.dumps(_stats(part, self.layout))))
        return actions

    def _put(self, path: str, data: pa.Buffer) -> None:
        """A new file, on disk before the commit that names it (fsynced where local; one
        PUT on an object store)."""
        target = f"{self.root}/{path}"
        if isinstance(self.filesystem, pafs.LocalFileSystem):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            return
        with self.filesystem.open_output_stream(target) as out:
            out.write(data)

    def _delete(self, paths: list[str]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError, OSError):
                self.filesystem.delete_file(f"{self.root}/{path}")


def _with_date(table: pa.Table, layout: Layout, value: str) -> pa.Table:
    kind = layout.keys[layout.date_key]
    scalar = pa.scalar(date.fromisoformat(value) if pa.types.is_date(kind) else value, kind)
    position = list(layout.keys).index(layout.date_key)
    return table.add_column(position, pa.field(layout.date_key, kind, False),
                            pa.array([scalar.as_py()] * table.num_rows, kind))


def _text(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


def _stats(part: pa.Table, layout: Layout) -> dict:
    """Delta's statistics of a file: rows, and each flat column's range and nulls."""
    flat = [k for k in layout.sort_keys] + ["load_id", "loaded_at"]
    low, high, nulls = {}, {}, {}
    for name in flat:
        column = part.column(name)
        bounds = pc.min_max(column).as_py()
        low[name], high[name] = (_json(bounds["min"]), _json(bounds["max"]))
        nulls[name] = column.null_count
    return {"numRecords": part.num_rows, "minValues": low, "maxValues": high,
            "nullCount": nulls}


def _json(value: object) -> object:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    if isinstance(value, date):
        return value.isoformat()
    return value


def _partition_set(rows: pa.Table, keys: list[str]) -> set[tuple]:
    return {tuple(r.values()) for r in rows.select(keys).to_pylist()}


@dataclass
class AreaSnapshot:
    """An area's table at one version (``version`` None: no commit yet): its active files
    as of then, whatever commits come after."""

    area_table: AreaTable
    version: int | None
    adds: pa.Table | None
    """Delta's add actions of the version (``get_add_actions(flatten=True)``)."""

    def files(self, dates: Iterable[object] | None = None) -> list[str]:
        """The active files (paths relative to the table), of ``dates`` or all."""
        if self.adds is None:
            return []
        adds = self.adds
        if dates is not None:
            key = self.area_table.layout.date_key
            kind = self.area_table.layout.keys[key]
            adds = adds.filter(pc.is_in(adds.column(f"partition.{key}"),
                                        value_set=pa.array(list(dates), kind)))
        return sorted(adds.column("path").to_pylist())

    def nested_field(self, table: str, name: str,
                     partitions: Sequence[Mapping[str, object]]) -> pa.Table:
        """The keys of the rows of ``partitions`` and one field of one of their nested
        tables (``table``: a list of structs of that field alone): read from the files
        without the table's other fields."""
        layout = self.area_table.layout
        dates = {_typed(p[layout.date_key], layout.keys[layout.date_key]) for p in partitions}
        stored = [k for k in layout.keys if k != layout.date_key]
        parts = []
        for path in self.files(dates):
            source = self.area_table.filesystem.open_input_file(
                f"{self.area_table.root}/{path}")
            part = pq.ParquetFile(source).read(
                columns=[*stored, "load_id", f"{table}.list.element.{name}"])
            value = parse_partition(path.rsplit("/", 1)[0])[layout.date_key]
            parts.append(_with_date(part, layout, value).select(
                [*layout.keys, "load_id", table]))
        if not parts:
            return pa.table({k: pa.array([], t) for k, t in layout.keys.items()})
        rows = pa.concat_tables(parts)
        wanted = {tuple(_typed(p[k], t) for k, t in layout.keys.items()) for p in partitions}
        return rows.filter(pa.array(
            [tuple(r.values()) in wanted for r in rows.select(list(layout.keys)).to_pylist()],
            pa.bool_()))

    def rows(self, columns: list[str], partitions: Sequence[Mapping[str, object]] | None
             ) -> pa.Table:
        """``columns`` of the rows of ``partitions`` (None: all), every load of each
        (two writers may have added one twice: ``records`` picks)."""
        return self._rows(columns, partitions)

    def _rows(self, columns: list[str], partitions: Sequence[Mapping[str, object]] | None
              ) -> pa.Table:
        layout = self.area_table.layout
        dates = None if partitions is None else {
            _typed(p[layout.date_key], layout.keys[layout.date_key]) for p in partitions}
        files = self.files(dates)
        if not files:
            return pa.table({c: pa.array([], layout.schema.field(c).type) for c in columns})
        if all(not pa.types.is_list(layout.schema.field(c).type) for c in columns):
            rows = self._flat(files, columns)  # keys and loads: all files at once
        else:
            rows = pa.concat_tables([self.area_table.read_file(path, columns)
                                     for path in files])
        if partitions is not None:
            wanted = {tuple(_typed(p[k], t) for k, t in layout.keys.items())
                      for p in partitions}
            keys = list(layout.keys)
            rows = rows.filter(pa.array(
                [tuple(r.values()) in wanted for r in rows.select(keys).to_pylist()],
                pa.bool_()))
        return rows

    def _flat(self, files: list[str], columns: list[str]) -> pa.Table:
        """Flat columns of ``files``, read together by Arrow's dataset scanner (threads,
        each file's footer once), the date from the files' paths."""
        table = self.area_table
        layout = table.layout
        kind = layout.keys[layout.date_key]
        fs = getattr(table.filesystem, "raw", table.filesystem)
        dataset = ds.dataset([f"{table.root}/{f}" for f in files], format="parquet",
                             filesystem=fs, partition_base_dir=table.root,
                             partitioning=ds.partitioning(
                                 pa.schema([(layout.date_key, kind)]), flavor="hive"))
        return dataset.to_table(columns=columns).cast(
            pa.schema([layout.schema.field(c) for c in columns]))

    def records(self, partitions: Sequence[Mapping[str, object]] | None = None
                ) -> dict[str, LoadRecord]:
        """partition path -> its load, of ``partitions`` (None: every one). Where a
        partition has two rows (two writers added it at once), the newest load wins."""
        layout = self.area_table.layout
        keys = list(layout.keys)
        rows = self._rows([*keys, *LOAD_COLUMNS], partitions)
        found: dict[str, LoadRecord] = {}
        for row in rows.to_pylist():
            path = partition_path({k: _text(row[k]) for k in keys})
            if path in found and found[path].load_id >= row["load_id"]:
                continue
            found[path] = LoadRecord(row["load_id"], row["loaded_at"], list(layout.tables),
                                     json.loads(row["metadata"]))
        return found

    def read(self, table: str, partition: Mapping[str, object]) -> pa.Table:
        """One partition's rows of one of the area's tables (of its newest load)."""
        layout = self.area_table.layout
        rows = self._rows([*layout.keys, "load_id", table], [partition])
        if not rows.num_rows:
            raise FileNotFoundError(f"no committed {table} in partition "
                                    f"{partition_path(partition)}")
        newest = pc.max(rows.column("load_id")).as_py()
        rows = rows.filter(pc.equal(rows.column("load_id"), newest))
        values = pc.list_flatten(rows.column(table))
        values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        nested = layout.nested(table)
        flat = pa.Table.from_arrays(values.flatten(), schema=nested) if len(values) \
            else nested.empty_table()
        schema = layout.tables[table]
        typed = {k: _typed(v, layout.keys[k]) for k, v in partition.items()}
        return pa.table({f.name: flat.column(f.name).cast(f.type) if f.name in nested.names
                         else pa.array([typed[f.name]] * flat.num_rows, f.type)
                         for f in schema}, schema=schema)


def _typed(value: object, kind: pa.DataType) -> object:
    if pa.types.is_date(kind) and isinstance(value, str):
        return date.fromisoformat(value)
    if pa.types.is_integer(kind) and isinstance(value, str):
        return int(value)
    return value
