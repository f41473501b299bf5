"""The lake on object storage (S3 or an S3-compatible store such as MinIO), through
pyarrow's filesystem layer.

Object stores have no rename, so a partition is committed by one PUT instead:

1. each table's file is written under its final, unique name
   ``<prefix>/<table>/<key>=<value>/.../part-<load_id>.parquet``;
2. the commit: one small record ``<prefix>/_loads/<area>/<partition>/load-<load_id>.parquet``
   is PUT (a single object write is atomic). The partition's committed load is the newest
   record: load ids sort by load time, so a reader listing the folder takes the highest;
3. older records are deleted; the tables' Delta logs on the store take the partition
   (``pipeline.delta``: a mark under ``_loads/_unpublished`` PUT before the record says
   which partitions they may lack). Files of older loads stay for Delta readers of older
   snapshots until housekeeping vacuums them.

A crash before step 2 leaves files nobody reads (vacuumed by housekeeping); a crash after
it leaves the new partition in force, published by the next write or build of the area.
Listing is strongly consistent on S3, so a build that lists after a commit sees it.

The warehouse stays local; a build reads the store where it is
(``pipeline.warehouse.lakefiles``): one listing of the commit records (their names carry
the load ids), the records themselves, then the data files they name, through the same
Arrow S3 client. Nothing of the lake is copied to local disk. Credentials and region come from
the standard AWS environment variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``), never from the config file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.delta import Wanted, delta_path, publish_area
from pipeline.lake import (
    LOAD_SCHEMA,
    LOADS_DIR,
    UNPUBLISHED_DIR,
    LoadRecord,
    commit_record,
    data_file_name,
    file_digest,
    new_load_id,
    parquet_bytes,
    parse_partition,
    partition_path,
)
from pipeline.outcomes import ErrorKind

RECORD = re.compile(r"^load-(?P<load_id>.+)\.parquet$")


class ObjectLakeError(Exception):
    """The object store cannot be used as configured; the message names the URL."""

    kind = ErrorKind.STORAGE


def _partition_path(*parts: str, partition: Mapping[str, object]) -> str:
    return "/".join([*parts, partition_path(partition)])


@cache
def _filesystem(endpoint_url: str | None) -> pafs.S3FileSystem:
    # Credentials and region: the AWS SDK's default chain (the standard environment
    # variables, profiles), as every AWS tool reads them.
    options: dict = {"connect_timeout": 5, "request_timeout": 60,
                     "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=4)}
    if endpoint_url:
        options["endpoint_override"] = endpoint_url
        if endpoint_url.startswith("http://"):
            options["scheme"] = "http"
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    return pafs.S3FileSystem(**options)


@dataclass(frozen=True)
class ObjectLake:
    """The lake at ``url`` (``s3://bucket/prefix``), a ``LakeStore``. The Dagster resource
    ``lake`` when ``[lake] url`` is configured."""

    url: str
    endpoint_url: str | None = None

    def __post_init__(self) -> None:
        if not self.url.startswith("s3://") or len(self.url) <= len("s3://"):
            raise ObjectLakeError(f"lake url {self.url!r}: expected s3://bucket/prefix")

    @property
    def base(self) -> str:
        """``bucket/prefix`` as pyarrow names it."""
        return self.url.removeprefix("s3://").rstrip("/")

    @property
    def fs(self) -> pafs.S3FileSystem:
        return _filesystem(self.endpoint_url)

    def describe(self, table: str | None = None) -> str:
        return f"{self.url.rstrip('/')}/{table}" if table else self.url

    # --- writing ---------------------------------------------------------------------------

    def write(self, area: str, tables: Mapping[str, pa.Table],
              partition: Mapping[str, object],
              metadata: Mapping[str, object] | None = None,
              publish: bool = True) -> dict[str, str]:
        """Replace one partition of an area's tables by one commit; returns the objects.
        (``publish``: see ``publish``.)"""
        load_id = new_load_id()
        targets = {name: _partition_path(self.base, name, partition=partition)
                   + "/" + data_file_name(load_id) for name in tables}
        try:
            digests = {}
            for name, table in tables.items():
                data = parquet_bytes(table)
                digests[name] = file_digest(data)
                with self.fs.open_output_stream(targets[name]) as out:
                    out.write(data)
            record = commit_record(load_id, tables, digests, metadata)
            folder = self._records_folder(area, partition)
            with self.fs.open_output_stream(f"{self._marks_folder(area)}/{load_id}") as out:
                out.write(partition_path(partition).encode())
            pq.write_table(record, f"{folder}/load-{load_id}.parquet", filesystem=self.fs)
        except OSError as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot write {area} partition "
                                  f"{dict(partition)}: {exc}") from None
        self._remove_older(area, partition)
        if publish:
            self.publish(area)
        return targets

    def publish(self, area: str, everything: bool = False) -> int:
        """Bring the Delta logs of ``area``'s tables to its commit records
        (``pipeline.delta.publish_area``, through delta-rs' own S3 client)."""
        try:
            return publish_area(self, area, everything)
        except OSError as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot publish {area}: {exc}") from None

    # --- what a publication asks of the lake (``pipeline.delta.DeltaSource``) -----------

    @property
    def storage_options(self) -> dict[str, str]:
        """delta-rs' S3 settings: the endpoint; credentials and region from the standard
        AWS environment variables, as pyarrow reads them."""
        options = {}
        if self.endpoint_url:
            options["AWS_ENDPOINT_URL"] = self.endpoint_url
            if self.endpoint_url.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"
        return options

    def areas(self) -> list[str]:
        """The areas with commit records."""
        return sorted({key.split("/", 1)[0] for key in self.committed_loads()})

    def _marks_folder(self, area: str) -> str:
        return f"{self.base}/{LOADS_DIR}/{UNPUBLISHED_DIR}/{area}"

    def marked(self, area: str) -> dict[str, str]:
        infos = self.fs.get_file_info(pafs.FileSelector(self._marks_folder(area),
                                                        allow_not_found=True))
        marks = {}
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            # Another writer's publication may remove it between listing and reading (or
            # while it is read: a store may then fail the read as a broken stream).
            try:
                with self.fs.open_input_stream(info.path) as source:
                    marks[info.base_name] = source.read().decode()
            except OSError:
                if self.fs.get_file_info(info.path).type != pafs.FileType.NotFound:
                    raise
        return marks

    def unmark(self, area: str, marks: list[str]) -> None:
        for mark in marks:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_file(f"{self._marks_folder(area)}/{mark}")

    def partition_paths(self, area: str, first_only: bool = False) -> list[str]:
        paths = [key.removeprefix(f"{area}/") for key in self.committed_loads()
                 if key.startswith(f"{area}/")]
        return paths[:1] if first_only else paths

    def record(self, area: str, partition: str) -> LoadRecord | None:
        return self.committed(area, parse_partition(partition))

    def table_uri(self, table: str) -> str:
        return f"s3://{self.base}/{table}"

    def has_log(self, table: str) -> bool:
        return any(info.type == pafs.FileType.File for info in self.fs.get_file_info(
            pafs.FileSelector(f"{self.base}/{table}/_delta_log", allow_not_found=True)))

    def delta_tables(self) -> list[str]:
        """The tables with a Delta log."""
        folders = self.fs.get_file_info(pafs.FileSelector(self.base, allow_not_found=True))
        return sorted(f.base_name for f in folders if f.type == pafs.FileType.Directory
                      and not f.base_name.startswith("_") and self.has_log(f.base_name))

    def wanted(self, table: str, partition: str, load_id: str, rows: int | None) -> Wanted:
        name = data_file_name(load_id)
        info = self.fs.get_file_info(f"{self.base}/{table}/{partition}/{name}")
        if info.type != pafs.FileType.File:
            raise FileNotFoundError(f"{self.base}/{table}/{partition}/{name}")
        return Wanted(delta_path(partition, name), info.size,
                      int(info.mtime.timestamp() * 1000) if info.mtime else 0, rows)

    def file_schema(self, table: str, path: str) -> pa.Schema:
        return pq.read_schema(f"{self.base}/{table}/{path}", filesystem=self.fs)

    def _records_folder(self, area: str, partition: Mapping[str, object]) -> str:
        return _partition_path(self.base, LOADS_DIR, area, partition=partition)

    def _listing(self, folder: str, pattern: re.Pattern) -> dict[str, str]:
        """load id -> object path of the files in ``folder`` named like ``pattern``."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        except OSError as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot list {folder}: {exc}") from None
        found = {}
        for info in infos:
            match = pattern.match(info.base_name)
            if match and info.type == pafs.FileType.File:
                found[match["load_id"]] = info.path
        return found

    def _remove_older(self, area: str, partition: Mapping[str, object]) -> None:
        """The records older than the newest. (Their files stay for Delta readers of
        older snapshots until housekeeping vacuums them.)"""
        records = self._listing(self._records_folder(area, partition), RECORD)
        newest = max(records)
        stale = [path for load_id, path in records.items() if load_id < newest]
        for path in stale:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_file(path)

    # --- reading ---------------------------------------------------------------------------

    def committed(self, area: str, partition: Mapping[str, object]) -> LoadRecord | None:
        records = self._listing(self._records_folder(area, partition), RECORD)
        if not records:
            return None
        row = pq.read_table(records[max(records)], filesystem=self.fs,
                            schema=LOAD_SCHEMA).to_pylist()[0]
        return LoadRecord(row["load_id"], row["loaded_at"], row["tables"],
                          json.loads(row["metadata"]))

    def has(self, area: str, partition: Mapping[str, object]) -> bool:
        return bool(self._listing(self._records_folder(area, partition), RECORD))

    def partitions(self, area: str) -> list[dict[str, str]]:
        return [parse_partition(key.removeprefix(f"{area}/"))
                for key in self.committed_loads() if key.startswith(f"{area}/")]

    def read(self, area: str, table: str, partition: Mapping[str, object]) -> pa.Table:
        record = self.committed(area, partition)
        if record is None or table not in record.tables:
            raise FileNotFoundError(f"no committed {table} in {area} partition {partition}")
        return pq.read_table(_partition_path(self.base, table, partition=partition) + "/"
                             + data_file_name(record.load_id), filesystem=self.fs)

    # --- what a build reads (``pipeline.warehouse.lakefiles.StoreFiles``) ---------------

    def committed_loads(self) -> dict[str, str]:
        """Every committed partition (``area/key=value/...``) and its load id, from one
        listing of the commit records."""
        prefix = f"{self.base}/{LOADS_DIR}"
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(prefix, recursive=True,
                                                            allow_not_found=True))
        except OSError as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot list its commits: {exc}") from None
        newest: dict[str, str] = {}
        for info in infos:
            match = RECORD.match(info.base_name)
            if match and info.type == pafs.FileType.File:
                key = info.path[len(prefix) + 1:].rsplit("/", 1)[0]
                newest[key] = max(newest.get(key, ""), match["load_id"])
        return newest

    def sync(self) -> int:
        """Bring the tables' Delta logs to the store's commit records (a load killed before
        it published); returns the loads published. Builds read the store where it is."""
        return sum(self.publish(area) for area in self.areas())
