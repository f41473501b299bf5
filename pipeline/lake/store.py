"""The Parquet lake: Hive-partitioned tables whose partitions are replaced by one commit.

A source area (revenue, catalog, menu, vouchers) writes several tables per partition
(revenue: receipts, items, side dishes and payments of one location and business date).
They are replaced together, all new or all old, never mixed:

1. each table's file, and the commit record (load id, load time, the tables with their
   files' digests, the partition's metadata), is written under a temp name and fsynced,
   then the files are renamed to
   ``<lake>/<table>/<key>=<value>/.../part-<load_id>.parquet`` beside the committed ones;
2. the commit: the record is renamed to
   ``<lake>/_loads/<area>/<key>=<value>/.../load.parquet`` over the old record, a single
   rename. Readers only see the files of the committed load id;
3. the tables' Delta logs take the partition (``pipeline.lake.delta``: a marker in
   ``_loads/_unpublished`` says which partitions they may lack): engines that read Delta
   see it from then on. Files of replaced loads, and of loads killed before their commit,
   stay until the tables are vacuumed (``pipeline.lake.housekeeping``): a build, or a Delta
   reader of an older snapshot, may still be reading them.

A crash before step 2 leaves the old partition in force (its files are still there) and
new files nobody reads; a crash after it leaves the new one (and its Delta publication to
the next write or build of the area). (Folders are not fsynced:
after a power cut a rename may be lost, which leaves the old partition, and the next run
writes it again.) Load ids sort by load time,
so when one receipt turns up in two partitions (the POS moved it to another day) the
newer load wins (the staging models read ``loaded_at``). A lock per area partition keeps
two writers of the same partition in turn. Files are small per partition, so they are
written with snappy, without dictionaries and statistics (DuckDB prunes on the Hive
path), the cheapest settings to write.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.lake.delta import Wanted, delta_path, publish_area

LOADS_DIR = "_loads"
"""The commit records of every area, beside the tables."""
LOAD_FILE = "load.parquet"
UNPUBLISHED_DIR = "_unpublished"
"""In ``_loads``: per area, a marker per load whose partition the tables' Delta logs may not
hold yet (``pipeline.lake.delta``)."""
LOAD_SCHEMA = pa.schema([
    pa.field("load_id", pa.string(), nullable=False),
    pa.field("loaded_at", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("tables", pa.list_(pa.string()), nullable=False),
    pa.field("metadata", pa.string(), nullable=False),  # JSON object of strings
])
STALE_TEMP_SECONDS = 3600
"""A temp file this old is left by a killed write (a partition is written in seconds)."""


PARQUET_OPTIONS = {"compression": "snappy", "use_dictionary": False,
                   "write_statistics": False, "write_page_checksum": True}
"""How lake files are written: cheap to write, and every page with its CRC (for readers
that verify them: Spark, pyarrow)."""
FILES_KEY = "files"
"""In a commit record's metadata: per table, its file's rows, SHA-256 and ``columns``
(JSON): what a build checks the files against (``pipeline.warehouse.integrity``), and
which files have the same columns (``columns_digest``)."""


def file_digest(data: bytes | pa.Buffer | Path) -> str:
    """The SHA-256 of a file (or of its bytes), hex."""
    if not isinstance(data, Path):
        return hashlib.sha256(data).hexdigest()
    with open(data, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def parquet_bytes(table: pa.Table) -> pa.Buffer:
    """A lake file's bytes (``PARQUET_OPTIONS``), made in memory: hashed, then written
    whole."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **PARQUET_OPTIONS)
    return sink.getvalue()


def columns_digest(schema: pa.Schema) -> str:
    """What a file's columns are (names and types, not their metadata), as a short hash:
    files with the same are read together without matching their columns by name."""
    return hashlib.sha256("\x1f".join(f"{f.name}:{f.type}" for f in schema).encode()
                          ).hexdigest()[:16]


def commit_record(load_id: str, tables: Mapping[str, pa.Table], digests: Mapping[str, str],
                  metadata: Mapping[str, object] | None) -> pa.Table:
    """The commit record of a load: its id and time, its tables with their files' rows,
    digests and columns, and the partition's metadata (values as text)."""
    values = {k: str(v) for k, v in (metadata or {}).items()}
    values[FILES_KEY] = json.dumps({name: {"rows": table.num_rows, "sha256": digests[name],
                                           "columns": columns_digest(table.schema)}
                                    for name, table in tables.items()})
    return pa.Table.from_pylist([{
        "load_id": load_id, "loaded_at": datetime.now(UTC), "tables": list(tables),
        "metadata": json.dumps(values)}], schema=LOAD_SCHEMA)


def recorded_files(metadata: Mapping[str, str]) -> dict[str, dict]:
    """What a load recorded of each table's file (``FILES_KEY``, in its record's
    metadata): rows, SHA-256, columns; empty for a load before files were recorded."""
    return json.loads(metadata.get(FILES_KEY, "{}"))


def new_load_id(now: datetime | None = None) -> str:
    """A unique id that sorts by load time: ``20261123T131750123456Z-1a2b3c4d``."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%S%fZ}-{uuid.uuid4().hex[:8]}"


def data_file_name(load_id: str) -> str:
    return f"part-{load_id}.parquet"


def partition_path(partition: Mapping[str, object]) -> str:
    """A partition's Hive path, ``location_id=1001/business_date=2026-11-20``: the one
    place it is written (``parse_partition`` reads it)."""
    return "/".join(f"{key}={value}" for key, value in partition.items())


def partition_dir(lake_dir: Path, table: str, partition: Mapping[str, object]) -> Path:
    """The folder of one partition of a table (or of an area's commit records)."""
    return Path(lake_dir) / table / partition_path(partition)


def parse_partition(path: str) -> dict[str, str]:
    """``location_id=1001/business_date=2026-11-20`` as its keys and values
    (``partition_path`` written back)."""
    return dict(part.split("=", 1) for part in path.split("/"))


def _temp_name(target: Path) -> Path:
    return target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"


def _write_durably(contents: Mapping[Path, pa.Buffer]) -> dict[Path, Path]:
    """Each target's bytes in a temp file beside it, on disk (fsynced) once this returns;
    target -> temp."""
    temps: dict[Path, Path] = {}
    try:
        for target, data in contents.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            temps[target] = _temp_name(target)
            with open(temps[target], "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
        raise
    return temps


@contextmanager
def _partition_lock(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass(frozen=True)
class LoadRecord:
    """The committed load of one area partition."""

    load_id: str
    loaded_at: datetime
    tables: list[str]
    metadata: dict[str, str]

    @property
    def files(self) -> dict[str, dict]:
        return recorded_files(self.metadata)


class LakeStore(Protocol):
    """What the pipeline asks of a lake, wherever it is: ``Lake`` (a local folder) and
    ``pipeline.lake.objectlake.ObjectLake`` (S3) both are one. The Dagster resource ``lake``."""

    def describe(self, table: str | None = None) -> str:
        """Where the lake (or one table) is, for people."""

    def sync(self) -> int:
        """Bring the tables' Delta logs to the lake's commits (a load killed before it
        published); returns the loads published."""

    def write(self, area: str, tables: Mapping[str, pa.Table],
              partition: Mapping[str, object], metadata: Mapping[str, object] | None = None,
              publish: bool = True) -> dict[str, Path | str]:
        """Replace a partition's tables of ``area`` by one commit; their paths. With
        ``publish``, the tables' Delta logs take it at once, else at the next ``publish``."""

    def publish(self, area: str, everything: bool = False) -> int:
        """Bring the Delta logs of ``area``'s tables to its commits (``pipeline.lake.delta``):
        the partitions marked unpublished, or ``everything``."""

    def areas(self) -> list[str]:
        """The areas with commit records."""

    storage_options: dict[str, str] | None
    """delta-rs' settings for ``table_uri`` (None: a local path)."""

    def delta_tables(self) -> list[str]:
        """The tables with a Delta log."""

    def table_uri(self, table: str) -> str:
        """Where a table and its Delta log are."""

    def committed(self, area: str, partition: Mapping[str, object]) -> LoadRecord | None:
        """The partition's commit record, or None if it was never committed."""

    def record(self, area: str, partition: str) -> LoadRecord | None:
        """``committed`` of a partition given as its path (``key=value/...``)."""

    def has(self, area: str, partition: Mapping[str, object]) -> bool:
        """Is the partition committed?"""

    def partitions(self, area: str) -> list[dict[str, str]]:
        """Every committed partition of ``area``."""

    def read(self, area: str, table: str, partition: Mapping[str, object]) -> pa.Table:
        """A committed partition's table."""


@dataclass(frozen=True)
class Lake:
    """The lake in a local folder (a ``LakeStore``)."""

    root: Path

    def describe(self, table: str | None = None) -> str:
        return str(self.root / table) if table else str(self.root)

    def sync(self) -> int:
        """The local lake is what a build reads; its Delta logs are brought to its commits
        (a load killed before it published; a lake older than its logs)."""
        return sum(self.publish(area) for area in self.areas())

    def areas(self) -> list[str]:
        """The areas with commit records."""
        folder = self.root / LOADS_DIR
        return sorted(p.name for p in folder.iterdir() if p.is_dir()
                      and p.name != UNPUBLISHED_DIR) if folder.is_dir() else []

    def load_dir(self, area: str, partition: Mapping[str, object]) -> Path:
        return partition_dir(self.root / LOADS_DIR, area, partition)

    def write(self, area: str, tables: Mapping[str, pa.Table],
              partition: Mapping[str, object],
              metadata: Mapping[str, object] | None = None,
              publish: bool = True) -> dict[str, Path]:
        """Replace one partition of an area's tables by one commit; returns the files.
        With ``publish`` the area's Delta logs take it at once, else with the area's next
        ``publish`` (a load of many partitions publishes them together)."""
        load_id = new_load_id()
        targets = {name: partition_dir(self.root, name, partition) / data_file_name(load_id)
                   for name in tables}
        contents = {targets[name]: parquet_bytes(table) for name, table in tables.items()}
        record = commit_record(load_id, tables, {
            name: file_digest(contents[target]) for name, target in targets.items()}, metadata)
        commit = self.load_dir(area, partition) / LOAD_FILE
        temps = _write_durably({**contents, commit: parquet_bytes(record)})
        try:
            self._mark_unpublished(area, load_id, partition)
            with _partition_lock(commit.parent):
                for target in targets.values():
                    os.replace(temps[target], target)
                os.replace(temps[commit], commit)  # the commit point
                # Temp files a killed write of this partition left behind. (Files of
                # replaced loads stay for readers of older Delta snapshots, until the
                # tables are vacuumed.)
                self.remove_stale_temp_files(folders=[commit.parent, *(
                    target.parent for target in targets.values())])
        except BaseException:
            for temp in temps.values():
                temp.unlink(missing_ok=True)
            raise
        if publish:
            self.publish(area)
        return targets

    def _mark_unpublished(self, area: str, load_id: str,
                          partition: Mapping[str, object]) -> None:
        folder = self.root / LOADS_DIR / UNPUBLISHED_DIR / area
        folder.mkdir(parents=True, exist_ok=True)
        temp = folder / f".{load_id}.tmp"
        temp.write_text(partition_path(partition))
        os.replace(temp, folder / load_id)

    def publish(self, area: str, everything: bool = False) -> int:
        """Bring the Delta logs of ``area``'s tables to its commit records
        (``pipeline.lake.delta.publish_area``)."""
        return publish_area(self, area, everything)

    # --- what a publication asks of the lake (``pipeline.lake.delta.DeltaSource``) -----------

    storage_options = None
    publish_options = None

    def marked(self, area: str) -> dict[str, str]:
        marks = {}
        for mark in (self.root / LOADS_DIR / UNPUBLISHED_DIR / area).glob("[!.]*"):
            # another writer's publication may remove it between listing and reading
            with contextlib.suppress(FileNotFoundError):
                marks[mark.name] = mark.read_text()
        return marks

    def unmark(self, area: str, marks: list[str]) -> None:
        for mark in marks:
            (self.root / LOADS_DIR / UNPUBLISHED_DIR / area / mark).unlink(missing_ok=True)

    def partition_paths(self, area: str, first_only: bool = False) -> list[str]:
        folder = self.root / LOADS_DIR / area
        found = (c.parent.relative_to(folder).as_posix()
                 for c in folder.glob(f"**/{LOAD_FILE}"))
        return list(itertools.islice(found, 1) if first_only else found)

    def record(self, area: str, partition: str) -> LoadRecord | None:
        return self.committed(area, parse_partition(partition))

    def table_uri(self, table: str) -> str:
        return str(self.root / table)

    def has_log(self, table: str) -> bool:
        return (self.root / table / "_delta_log").is_dir()

    def delta_tables(self) -> list[str]:
        """The tables with a Delta log."""
        return sorted(p.name for p in self.root.iterdir()
                      if (p / "_delta_log").is_dir()) if self.root.is_dir() else []

    def wanted(self, table: str, partition: str, load_id: str, rows: int | None) -> Wanted:
        name = data_file_name(load_id)
        stat = (self.root / table / partition / name).stat()
        return Wanted(delta_path(partition, name), stat.st_size, int(stat.st_mtime * 1000),
                      rows)

    def file_schema(self, table: str, path: str) -> pa.Schema:
        return pq.read_schema(self.root / table / path)

    def committed(self, area: str, partition: Mapping[str, object]) -> LoadRecord | None:
        """The partition's committed load, or None when it was never written."""
        try:  # (ParquetFile, one thread: a sixth of what read_table's dataset scan costs)
            row = pq.ParquetFile(self.load_dir(area, partition) / LOAD_FILE).read(
                columns=LOAD_SCHEMA.names, use_threads=False).to_pylist()[0]
        except FileNotFoundError:
            return None
        return LoadRecord(row["load_id"], row["loaded_at"], row["tables"],
                          json.loads(row["metadata"]))

    def has(self, area: str, partition: Mapping[str, object]) -> bool:
        """Whether the partition has been committed."""
        return (self.load_dir(area, partition) / LOAD_FILE).exists()

    def partitions(self, area: str) -> list[dict[str, str]]:
        """Every committed partition of ``area`` (its keys and values, as strings)."""
        return [parse_partition(p) for p in self.partition_paths(area)]

    def read(self, area: str, table: str, partition: Mapping[str, object]) -> pa.Table:
        """The committed rows of one table's partition."""
        record = self.committed(area, partition)
        if record is None or table not in record.tables:
            raise FileNotFoundError(f"no committed {table} in {area} partition {partition}")
        return pq.read_table(partition_dir(self.root, table, partition)
                             / data_file_name(record.load_id))

    def remove_stale_temp_files(self, older_than_seconds: float = STALE_TEMP_SECONDS,
                                folders: Iterable[Path] | None = None) -> int:
        """Delete temp files of writes killed midway, in ``folders`` (every write sweeps its
        partition's, so the history is not walked) or the whole lake; returns how many.

        Only files older than any write takes: a concurrent load's temp files are young.
        (Renamed files of a load killed before its commit are removed by the partition's
        next write.)
        """
        if not self.root.exists():
            return 0
        cutoff = time.time() - older_than_seconds
        removed = 0
        temps = self.root.rglob(".*.tmp") if folders is None else (
            temp for folder in folders for temp in folder.glob(".*.tmp"))
        for temp in temps:
            try:
                if temp.stat().st_mtime < cutoff:
                    temp.unlink()
                    removed += 1
            except FileNotFoundError:  # renamed or removed meanwhile
                pass
        return removed
