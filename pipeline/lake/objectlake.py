"""The lake on object storage (S3 or an S3-compatible store such as MinIO), through
pyarrow's filesystem layer.

Object stores have no rename, so a partition is committed by one PUT instead:

1. each table's file is written under its final, unique name
   ``<prefix>/<table>/<key>=<value>/.../part-<load_id>.parquet``;
2. the commit: one small record ``<prefix>/_loads/<area>/<partition>/load-<load_id>.parquet``
   is PUT (a single object write is atomic). The partition's committed load is the newest
   record: load ids sort by load time, so a reader listing the folder takes the highest;
3. older records are deleted; the tables' Delta logs on the store take the partition
   (``pipeline.lake.delta``: a mark under ``_loads/_unpublished`` PUT before the record says
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake.exceptions import DeltaError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from pipeline.core.outcomes import ErrorKind
from pipeline.lake.delta import Wanted, delta_path, publish_area
from pipeline.lake.store import (
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

RECORD = re.compile(r"^load-(?P<load_id>.+)\.parquet$")


class ObjectLakeError(Exception):
    """The object store cannot be used as configured; the message names the URL."""

    kind = ErrorKind.STORAGE


T = TypeVar("T")

PERMANENT = ("ACCESS_DENIED", "AccessDenied", "NO_SUCH_BUCKET", "NoSuchBucket",
             "INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId", "SIGNATURE_DOES_NOT_MATCH",
             "SignatureDoesNotMatch", "Forbidden", "curlCode: 6,", "curlCode: 7,")
"""What a store answers that trying again cannot change (credentials, the bucket), and a
store nobody answers at (no such host, nothing listening: the SDK has tried it for five
seconds already), so a lake that is down fails at once, by name."""


def transient(exc: BaseException) -> bool:
    """A store error worth another attempt: a 5xx, a reset or broken stream, a timeout
    (pyarrow's ``OSError``, or its ``ArrowInvalid`` when a Parquet file's read failed at
    the store; delta-rs' ``DeltaError``), not a missing object or a refusal."""
    store = isinstance(exc, OSError | DeltaError) or (
        isinstance(exc, pa.ArrowException) and "AWS Error" in str(exc))
    return store and not isinstance(exc, FileNotFoundError) \
        and not any(marker in str(exc) for marker in PERMANENT)


def _partition_path(*parts: str, partition: Mapping[str, object]) -> str:
    return "/".join([*parts, partition_path(partition)])


@cache
def _filesystem(endpoint_url: str | None) -> pafs.S3FileSystem:
    # Credentials and region: the AWS SDK's default chain (the standard environment
    # variables, profiles), as every AWS tool reads them. A delayed open writes an object
    # smaller than a part (every lake file) with one PutObject, which the SDK retries as
    # a whole, instead of a multipart upload of three requests it does not.
    options: dict = {"connect_timeout": 5, "request_timeout": 60, "allow_delayed_open": True,
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
    retry_attempts: int = 8
    """Attempts of one store operation (an object written or read, a table's publication)
    on transient errors, with exponential backoff and jitter (``[lake] retry_attempts``)."""
    retry_seconds: float = 120.0
    """The time one operation may take with its attempts (``[lake] retry_seconds``)."""

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

    def retried(self, action: Callable[[], T]) -> T:
        """``action()``, again on a transient store error (``transient``) with
        exponential backoff and jitter, within the lake's budget (``retry_attempts``,
        ``retry_seconds``); then its last error is raised."""
        for attempt in Retrying(
                stop=stop_after_attempt(self.retry_attempts)
                | stop_after_delay(self.retry_seconds),
                wait=wait_exponential_jitter(initial=0.1, max=10, jitter=0.1),
                retry=retry_if_exception(transient), reraise=True):
            with attempt:
                return action()
        raise AssertionError("unreachable: tenacity returns or raises")

    def _info(self, what: str | pafs.FileSelector):
        """``get_file_info`` of a path or a listing, retried."""
        return self.retried(lambda: self.fs.get_file_info(what))

    def _read(self, path: str) -> bytes:
        """One object's bytes, retried."""
        def read() -> bytes:
            with self.fs.open_input_stream(path) as source:
                return source.read()
        return self.retried(read)

    def _delete(self, path: str) -> None:
        """Delete one object (gone already: fine), retried."""
        def delete() -> None:
            with contextlib.suppress(FileNotFoundError):
                self.fs.delete_file(path)
        self.retried(delete)

    def _put(self, path: str, data: bytes | pa.Buffer) -> None:
        """One object, whole (retried: the same bytes to the same key)."""
        def put() -> None:
            with self.fs.open_output_stream(path) as out:
                out.write(data)
        try:
            self.retried(put)
        except OSError as exc:
            raise OSError(f"object {path}: {exc}") from None

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
                self._put(targets[name], data)
            record = commit_record(load_id, tables, digests, metadata)
            folder = self._records_folder(area, partition)
            self._put(f"{self._marks_folder(area)}/{load_id}",
                      partition_path(partition).encode())
            sink = pa.BufferOutputStream()
            pq.write_table(record, sink)
            self._put(f"{folder}/load-{load_id}.parquet", sink.getvalue())  # the commit
        except OSError as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot write {area} partition "
                                  f"{dict(partition)}: {exc}") from None
        self._remove_older(area, partition)
        if publish:
            self.publish(area)
        return targets

    def publish(self, area: str, everything: bool = False) -> int:
        """Bring the Delta logs of ``area``'s tables to its commit records
        (``pipeline.lake.delta.publish_area``, through delta-rs' own S3 client)."""
        try:  # idempotent: it brings the logs to the records, whatever it did before
            return self.retried(lambda: publish_area(self, area, everything))
        except (OSError, DeltaError, pa.ArrowException) as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot publish {area} (its partitions "
                                  f"are committed; the next load or build publishes "
                                  f"them): {exc}") from None

    # --- what a publication asks of the lake (``pipeline.lake.delta.DeltaSource``) -----------

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

    @property
    def publish_options(self) -> dict[str, str]:
        """``storage_options`` and delta-rs' retries of a publication's requests, within
        the lake's budget (``retry_attempts``, ``retry_seconds``)."""
        return self.storage_options | {"max_retries": str(self.retry_attempts),
                                        "retry_timeout": f"{int(self.retry_seconds)}s"}

    def areas(self) -> list[str]:
        """The areas with commit records."""
        return sorted({key.split("/", 1)[0] for key in self.committed_loads()})

    def _marks_folder(self, area: str) -> str:
        return f"{self.base}/{LOADS_DIR}/{UNPUBLISHED_DIR}/{area}"

    def marked(self, area: str) -> dict[str, str]:
        infos = self._info(pafs.FileSelector(self._marks_folder(area), allow_not_found=True))
        marks = {}
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            # Another writer's publication may remove it between listing and reading (or
            # while it is read: a store may then fail the read as a broken stream).
            try:
                marks[info.base_name] = self._read(info.path).decode()
            except OSError:
                if self._info(info.path).type != pafs.FileType.NotFound:
                    raise
        return marks

    def unmark(self, area: str, marks: list[str]) -> None:
        for mark in marks:
            self._delete(f"{self._marks_folder(area)}/{mark}")

    def partition_paths(self, area: str, first_only: bool = False) -> list[str]:
        paths = [key.removeprefix(f"{area}/") for key in self.committed_loads()
                 if key.startswith(f"{area}/")]
        return paths[:1] if first_only else paths

    def record(self, area: str, partition: str) -> LoadRecord | None:
        return self.committed(area, parse_partition(partition))

    def table_uri(self, table: str) -> str:
        return f"s3://{self.base}/{table}"

    def has_log(self, table: str) -> bool:
        return any(info.type == pafs.FileType.File for info in self._info(
            pafs.FileSelector(f"{self.base}/{table}/_delta_log", allow_not_found=True)))

    def delta_tables(self) -> list[str]:
        """The tables with a Delta log."""
        folders = self._info(pafs.FileSelector(self.base, allow_not_found=True))
        return sorted(f.base_name for f in folders if f.type == pafs.FileType.Directory
                      and not f.base_name.startswith("_") and self.has_log(f.base_name))

    def wanted(self, table: str, partition: str, load_id: str, rows: int | None) -> Wanted:
        name = data_file_name(load_id)
        info = self._info(f"{self.base}/{table}/{partition}/{name}")
        if info.type != pafs.FileType.File:
            raise FileNotFoundError(f"{self.base}/{table}/{partition}/{name}")
        return Wanted(delta_path(partition, name), info.size,
                      int(info.mtime.timestamp() * 1000) if info.mtime else 0, rows)

    def file_schema(self, table: str, path: str) -> pa.Schema:
        return pq.read_schema(pa.BufferReader(self._read(f"{self.base}/{table}/{path}")))

    def _records_folder(self, area: str, partition: Mapping[str, object]) -> str:
        return _partition_path(self.base, LOADS_DIR, area, partition=partition)

    def _listing(self, folder: str, pattern: re.Pattern) -> dict[str, str]:
        """load id -> object path of the files in ``folder`` named like ``pattern``."""
        try:
            infos = self._info(pafs.FileSelector(folder, allow_not_found=True))
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
            self._delete(path)

    # --- reading ---------------------------------------------------------------------------

    def committed(self, area: str, partition: Mapping[str, object]) -> LoadRecord | None:
        records = self._listing(self._records_folder(area, partition), RECORD)
        if not records:
            return None
        # the record whole in one read (a Parquet reader would ask three times)
        row = pq.read_table(pa.BufferReader(self._read(records[max(records)])),
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
            infos = self._info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
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
