"""The lake on object storage (S3 or an S3-compatible store such as MinIO).

The same Delta tables as a local lake (``pipeline.lake.store``), at
``s3://bucket/prefix/<area>``: the data files are written by pyarrow's S3 client (one
PUT each), and the commit is delta-rs' own on the store (S3's conditional writes: of two
writers of one version, one wins and the other reads the new version and writes again).
A crash before the commit leaves files nobody reads (housekeeping's vacuum deletes them).

The warehouse stays local; a build reads the store where it is
(``pipeline.warehouse.lakefiles``). Credentials and region come from the standard AWS
environment variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``), never from the config file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake.exceptions import DeltaError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential_jitter,
)

from pipeline.core.outcomes import ErrorKind
from pipeline.core.untrusted import one_line
from pipeline.lake.source_mark import SourceMark
from pipeline.lake.store import DeltaAreas, partition_path


class ObjectLakeError(Exception):
    """The object store cannot be used as configured; the message names the URL."""

    kind = ErrorKind.STORAGE


T = TypeVar("T")

PERMANENT = ("ACCESS_DENIED", "AccessDenied", "NO_SUCH_BUCKET", "NoSuchBucket",
             "INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId", "SIGNATURE_DOES_NOT_MATCH",
             "SignatureDoesNotMatch", "Forbidden", "curlCode: 6,", "curlCode: 7,")
"""What a store answers that trying again cannot change (credentials, the bucket), and a
store nobody answers at (no such host, nothing listening: the SDK has tried it for five
seconds already), so a lake that is down fails by name without the lake's retries on
top."""


def transient(exc: BaseException) -> bool:
    """A store error worth another attempt: a 5xx, a reset or broken stream, a timeout
    (pyarrow's ``OSError``, or its ``ArrowInvalid`` when a Parquet file's read failed at
    the store; delta-rs' ``DeltaError``), not a missing object or a refusal."""
    store = isinstance(exc, OSError | DeltaError) or (
        isinstance(exc, pa.ArrowException) and "AWS Error" in str(exc))
    return store and not isinstance(exc, FileNotFoundError) \
        and not any(marker in str(exc) for marker in PERMANENT)


@cache
def s3_filesystem(endpoint_url: str | None) -> pafs.S3FileSystem:
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
class ObjectLake(DeltaAreas):
    """The lake at ``url`` (``s3://bucket/prefix``), a ``LakeStore``. The Dagster resource
    ``lake`` when ``[lake] url`` is configured."""

    url: str
    endpoint_url: str | None = None
    retry_attempts: int = 8
    """Attempts of one store operation (an object written or read, a table's publication)
    on transient errors, with exponential backoff and jitter (``[lake] retry_attempts``)."""
    retry_seconds: float = 120.0
    """The time one operation may take with its attempts (``[lake] retry_seconds``)."""
    source: SourceMark | None = None

    def __post_init__(self) -> None:
        if not self.url.startswith("s3://") or len(self.url) <= len("s3://"):
            raise ObjectLakeError(f"lake url {self.url!r}: expected s3://bucket/prefix")

    @property
    def base(self) -> str:
        """``bucket/prefix`` as pyarrow names it."""
        return self.url.removeprefix("s3://").rstrip("/")

    @property
    def fs(self) -> pafs.S3FileSystem:
        return s3_filesystem(self.endpoint_url)

    def describe(self, table: str | None = None) -> str:
        return f"{self.url.rstrip('/')}/{table}" if table else self.url

    def retried(self, action: Callable[[], T]) -> T:
        """``action()``, again on a transient store error (``transient``) with
        exponential backoff and jitter, within the lake's budget (``retry_attempts``,
        ``retry_seconds``); then its last error is raised."""
        for attempt in Retrying(
                stop=stop_after_attempt(self.retry_attempts)
                | stop_after_delay(self.retry_seconds),
                wait=wait_exponential_jitter(multiplier=0.1, max=10, jitter=0.1),
                retry=retry_if_exception(transient), reraise=True):
            with attempt:
                return action()
        raise AssertionError("unreachable: tenacity returns or raises")

    @property
    def storage_options(self) -> dict[str, str]:
        """delta-rs' S3 settings: the endpoint, and its retries within the lake's budget
        (``retry_attempts``, ``retry_seconds``); credentials and region from the standard
        AWS environment variables, as pyarrow reads them."""
        options = {"max_retries": str(self.retry_attempts),
                   "retry_timeout": f"{int(self.retry_seconds)}s"}
        if self.endpoint_url:
            options["AWS_ENDPOINT_URL"] = self.endpoint_url
            if self.endpoint_url.startswith("http://"):
                options["AWS_ALLOW_HTTP"] = "true"
        return options

    @property
    def reader_options(self) -> dict[str, str]:
        """``storage_options`` without the retry settings (which Polars rejects)."""
        return {k: v for k, v in self.storage_options.items()
                if k not in ("max_retries", "retry_timeout")}

    def table_uri(self, area: str) -> str:
        return f"{self.url.rstrip('/')}/{area}"

    def _filesystem(self) -> tuple[pafs.FileSystem, str]:
        return RetriedFileSystem(self), self.base

    def areas(self) -> list[str]:
        try:
            infos = self.retried(lambda: self.fs.get_file_info(
                pafs.FileSelector(self.base, allow_not_found=True)))
        except OSError as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot list it: {exc}") from None
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)

    def write_batch(self, area, batch):
        try:
            return super().write_batch(area, batch)
        except (OSError, DeltaError, pa.ArrowException) as exc:
            first = min(partition_path(r.partition) for r in batch)
            where = first + (f" and {len(batch) - 1} more" if len(batch) > 1 else "")
            raise ObjectLakeError(f"lake {self.url}: cannot write {area} partition "
                                  f"{where}: {one_line(str(exc))}") from None

    def records(self, area, partitions=None):
        try:
            return super().records(area, partitions)
        except (OSError, DeltaError, pa.ArrowException) as exc:
            raise ObjectLakeError(f"lake {self.url}: cannot read {area}: {one_line(str(exc))}") \
                from None


class RetriedFileSystem:
    """What an area's table asks of pyarrow's S3 filesystem, each call retried on a
    transient store error (``ObjectLake.retried``)."""

    def __init__(self, lake: ObjectLake) -> None:
        self.lake = lake

    @property
    def raw(self) -> pafs.FileSystem:
        """pyarrow's own filesystem (for its dataset scanner, which retries nothing but
        what the AWS SDK does)."""
        return self.lake.fs

    def open_input_file(self, path: str):
        data = self.lake.retried(lambda: self.lake.fs.open_input_file(path).read())
        return pa.BufferReader(data)

    def open_output_stream(self, path: str):
        return _Put(self.lake, path)

    def delete_file(self, path: str) -> None:
        def delete() -> None:
            with contextlib.suppress(FileNotFoundError):
                self.lake.fs.delete_file(path)
        self.lake.retried(delete)


class _Put:
    """An object written whole on close, the PUT retried (the same bytes to the same key)."""

    def __init__(self, lake: ObjectLake, path: str) -> None:
        self.lake, self.path, self.parts = lake, path, []

    def write(self, data) -> None:
        self.parts.append(bytes(data))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            return

        def put() -> None:
            with self.lake.fs.open_output_stream(self.path) as out:
                out.write(b"".join(self.parts))
        try:
            self.lake.retried(put)
        except OSError as exc:
            raise OSError(f"object {self.path}: {exc}") from None
