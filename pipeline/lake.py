"""The Parquet lake: Hive-partitioned tables, one file per partition, replaced atomically.

``<lake>/<table>/<key>=<value>/.../data.parquet``. A partition is written to a temp file
in its own folder, fsynced, then renamed over the old file, so a crash at any moment
leaves the old file or the new one, never a torn one. (The folder itself is not
fsynced: after a power cut the rename may be lost, which leaves the old file, and the
next run writes it again.) When several tables of one partition are written together,
all temp files are complete before the first rename. Files are small per partition, so
they are written with snappy, without dictionaries and statistics (DuckDB prunes on the
Hive path), the cheapest settings to write.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FILE_NAME = "data.parquet"
STALE_TEMP_SECONDS = 3600
"""A temp file this old is left by a killed write (a partition is written in seconds)."""


def partition_dir(lake_dir: Path, table: str, partition: Mapping[str, object]) -> Path:
    """The folder of one partition of a table."""
    path = Path(lake_dir) / table
    for key, value in partition.items():
        path = path / f"{key}={value}"
    return path


def partition_file(lake_dir: Path, table: str, partition: Mapping[str, object]) -> Path:
    return partition_dir(lake_dir, table, partition) / FILE_NAME


def _write_temp(target: Path, table: pa.Table, metadata: Mapping[str, str]) -> Path:
    """Arrow writes the file natively, next to its target, under a temp name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    schema_meta = dict(table.schema.metadata or {})
    schema_meta.update({k.encode(): str(v).encode() for k, v in metadata.items()})
    try:
        pq.write_table(table.replace_schema_metadata(schema_meta), str(temp),
                       compression="snappy", use_dictionary=False, write_statistics=False)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_partitions(
    lake_dir: Path,
    tables: Mapping[str, pa.Table],
    partition: Mapping[str, object],
    metadata: Mapping[str, str] | None = None,
) -> dict[str, Path]:
    """Replace one partition of each table atomically; returns the written file paths.

    Every temp file is written before the first fsync, so one journal commit usually
    carries them all; only fsynced files are renamed into place.
    """
    targets = {name: partition_file(lake_dir, name, partition) for name in tables}
    temps: dict[str, Path] = {}
    try:
        for name, table in tables.items():
            temps[name] = _write_temp(targets[name], table, metadata or {})
        for temp in temps.values():
            _fsync(temp)
    except BaseException:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
        raise
    for name, temp in temps.items():
        os.replace(temp, targets[name])
    return targets


def read_partition(lake_dir: Path, table: str, partition: Mapping[str, object]) -> pa.Table:
    """One partition's rows (for tests and checks)."""
    return pq.read_table(partition_file(lake_dir, table, partition))


@dataclass(frozen=True)
class Lake:
    """The lake of one pipeline: where its tables live. The Dagster resource ``lake``."""

    root: Path

    def write(self, tables: Mapping[str, pa.Table], partition: Mapping[str, object],
              metadata: Mapping[str, str] | None = None) -> dict[str, Path]:
        """Replace one partition of each table atomically."""
        return write_partitions(self.root, tables, partition, metadata)

    def remove_stale_temp_files(self, older_than_seconds: float = STALE_TEMP_SECONDS) -> int:
        """Delete temp files of writes killed midway; returns how many.

        Only files older than any write takes: a concurrent load's temp files are young.
        """
        if not self.root.exists():
            return 0
        cutoff = time.time() - older_than_seconds
        removed = 0
        for temp in self.root.rglob(".*.tmp"):
            try:
                if temp.stat().st_mtime < cutoff:
                    temp.unlink()
                    removed += 1
            except FileNotFoundError:  # renamed or removed meanwhile
                pass
        return removed

    def has(self, table: str, partition: Mapping[str, object]) -> bool:
        """Whether the partition has been written."""
        return partition_file(self.root, table, partition).exists()
