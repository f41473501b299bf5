"""Where a build reads the lake: a local folder, or the object store itself.

A build reads the files its commit records name (``pipeline.lake.store``): the records through
the lake, the data files with DuckDB's Parquet reader by path. ``LocalFiles`` are paths
on disk. ``StoreFiles`` read a lake on S3 where it is, no copy on local disk: DuckDB
reads ``s3://`` paths through Arrow's S3 client (the lake's own ``pyarrow.fs``
filesystem, registered with DuckDB as an fsspec filesystem: DuckDB's httpfs extension is
a download a build cannot count on), and the integrity check hashes each file as it
streams from the store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from fsspec.implementations.arrow import ArrowFSWrapper

from pipeline.lake.objectlake import ObjectLake
from pipeline.lake.store import LOAD_FILE, LOAD_SCHEMA, LOADS_DIR, Lake, LakeStore, file_digest
from pipeline.warehouse.lakeviews import arrow_insert, sql_path

Record = tuple[str, str, object, tuple[str, ...], str]
"""A committed partition: (partition, load id, loaded at, tables, metadata as JSON)."""
HASH_CHUNK = 1 << 20
RECORDS_SCHEMA = pa.schema([("area", pa.string()), ("partition", pa.string()),
                            ("load_id", pa.string()), ("loaded_at", pa.timestamp("us", "UTC")),
                            ("tables", pa.list_(pa.string())), ("metadata", pa.string())])
"""The records a build of a lake on object storage read (``StoreFiles.records``)."""


class LakeFiles(Protocol):
    """What a build reads of a lake."""

    base: str
    """The lake as the start of its files' paths: ``/data/lake``, ``s3://bucket/prefix``."""

    def prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        """Make the lake readable by the build's connection."""

    def records(self, con: duckdb.DuckDBPyConnection, areas: Iterable[str],
                known: str) -> dict[str, list[Record]]:
        """Every committed partition of each area. ``known`` is a table of the warehouse
        being built (created if missing) where a lake may keep the records it read."""

    def digest(self, path: str) -> str:
        """The SHA-256 of a file (hex)."""

    def parquet(self, path: str) -> pq.ParquetFile:
        """A file to read through, verifying each page's CRC."""


@dataclass(frozen=True)
class LocalFiles:
    """The lake in a local folder."""

    root: Path

    @property
    def base(self) -> str:
        return str(self.root)

    def prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        """Nothing: DuckDB reads local paths as they are."""

    def records(self, con: duckdb.DuckDBPyConnection, areas: Iterable[str],
                known: str) -> dict[str, list[Record]]:
        """Each area's records, read by DuckDB in one pass (a local read costs less than
        keeping them)."""
        return {area: self._records(con, area) for area in areas}

    def _records(self, con: duckdb.DuckDBPyConnection, area: str) -> list[Record]:
        folder = self.root / LOADS_DIR / area
        if next(folder.glob(f"**/{LOAD_FILE}"), None) is None:
            return []
        rows = con.execute(f"""
            select filename, load_id, loaded_at, tables, metadata
            from read_parquet('{sql_path(folder)}/**/{LOAD_FILE}', filename = true,
                              hive_partitioning = false)""").fetchall()
        root = str(folder.resolve()) + "/"
        return [(filename.removeprefix(root).removesuffix(f"/{LOAD_FILE}"), load_id,
                 loaded_at, tuple(tables), metadata)
                for filename, load_id, loaded_at, tables, metadata in rows]

    def digest(self, path: str) -> str:
        return file_digest(Path(path))

    def parquet(self, path: str) -> pq.ParquetFile:
        return pq.ParquetFile(path, page_checksum_verification=True)


@dataclass(frozen=True)
class StoreFiles:
    """A lake on object storage, read where it is."""

    lake: ObjectLake

    @property
    def base(self) -> str:
        return self.lake.url.rstrip("/")

    def prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        con.register_filesystem(ArrowFSWrapper(self.lake.fs))

    def records(self, con: duckdb.DuckDBPyConnection, areas: Iterable[str],
                known: str) -> dict[str, list[Record]]:
        """The newest record of each partition (one listing of them all: their names
        carry the load ids). A record never changes, so those ``known`` keeps (what the
        warehouse in place read) are not read again; the others are read by Arrow's
        dataset scanner, many at once, and kept."""
        arrow_insert(con, known, [], RECORDS_SCHEMA)
        kept = {(area, part, load_id): (part, load_id, loaded_at, tuple(tables), metadata)
                for area, part, load_id, loaded_at, tables, metadata
                in con.execute(f"select * from {known}").fetchall()}
        newest = self.lake.committed_loads()  # area/partition -> load id
        missing = {load_id: key for key, load_id in newest.items()
                   if tuple(key.split("/", 1)) + (load_id,) not in kept}
        if missing:
            table = self.lake.retried(lambda: ds.dataset(
                [f"{self.lake.base}/{LOADS_DIR}/{key}/load-{load_id}.parquet"
                 for load_id, key in missing.items()], schema=LOAD_SCHEMA,
                format="parquet", filesystem=self.lake.fs).to_table())
            for row in table.to_pylist():
                area, part = missing[row["load_id"]].split("/", 1)
                kept[area, part, row["load_id"]] = (part, row["load_id"], row["loaded_at"],
                                                    tuple(row["tables"]), row["metadata"])
        found: dict[str, list[Record]] = {area: [] for area in areas}
        for key, load_id in newest.items():
            area, part = key.split("/", 1)
            if area in found:
                found[area].append(kept[area, part, load_id])
        con.execute(f"delete from {known}")
        arrow_insert(con, known, [(area, *record) for area, records in found.items()
                                  for record in records], RECORDS_SCHEMA)
        return found

    def _key(self, path: str) -> str:
        return path.removeprefix("s3://")

    def digest(self, path: str) -> str:
        def read() -> str:
            sha = hashlib.sha256()
            with self.lake.fs.open_input_stream(self._key(path)) as source:
                while chunk := source.read(HASH_CHUNK):
                    sha.update(chunk)
            return sha.hexdigest()
        return self.lake.retried(read)

    def parquet(self, path: str) -> pq.ParquetFile:
        return pq.ParquetFile(self.lake.fs.open_input_file(self._key(path)),
                              page_checksum_verification=True)


def lake_files(lake: LakeStore | Path | str) -> LakeFiles:
    """What a build reads of ``lake`` (a lake, or a local lake's folder)."""
    if isinstance(lake, ObjectLake):
        return StoreFiles(lake)
    if isinstance(lake, Lake):
        return LocalFiles(lake.root.resolve())
    if isinstance(lake, LocalFiles | StoreFiles):
        return lake
    return LocalFiles(Path(lake).resolve())

