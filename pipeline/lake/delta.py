"""Every lake table as a Delta Lake table, for engines that know Delta and not our commits.

The lake's commit records (``pipeline.lake.store``) stay what a load commits and what our
warehouse reads: one record names the load whose files of all an area's tables belong
together. Each table's Delta log (``<lake>/<table>/_delta_log``, written with delta-rs)
follows the records: a publication makes a table's Delta snapshot hold, for each partition,
exactly the file its record names, in one Delta commit per table (the files replaced are
removed, the new ones added, in that same commit; our files are committed as they are,
nothing is rewritten).

So a reader that knows only Delta (Spark, Trino, Databricks, Polars, ``deltalake``) sees
each partition of a table once, from one load, never a file being written: a file is only
added after its record committed it. The tables are separate Delta tables, so between two
tables' commits of one publication a reader may see one table a publication ahead of
another (our warehouse reads the records and never sees that); each commit names its
publication (``PUBLICATION_KEY``), so a reader can pick versions that belong together.

A write marks its partition unpublished (a marker beside the records) before it commits;
a publication takes the marked partitions and removes their markers after its commits. A
load killed after its record and before its publication leaves its marker, so the next
publication of the area (the next write, or a build: ``Lake.sync``) publishes it. A table
without a Delta log (a lake of an older version) is published whole, from every record.

Two publications at once may both try to replace a partition's file: Delta refuses the
second commit (it removes a file the first removed), and the publication reads the
table's snapshot and the records again and retries.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import (
    AddAction,
    CommitProperties,
    RemoveAction,
    create_table_with_add_actions,
)

MARK_SECONDS = 3600
"""A mark whose load has not committed this long after it was made is of a killed write."""
ATTEMPTS = 5
"""How often a publication retries a commit another publication got in first."""
APP_ID = "pos-etl"
"""In the ``commitInfo`` of our Delta commits: who wrote them."""
PUBLICATION_KEY = "posEtlPublication"
"""In the ``commitInfo`` of our Delta commits: the publication they belong to, the same
in every table one publication commits to. A reader that needs an area's tables to agree
reads each at the version of the newest publication they all have (``history()``)."""


@dataclass(frozen=True)
class Wanted:
    """What a table's partition should hold: the file its record names."""

    path: str
    """Relative to the table: ``location_id=1001/business_date=2026-11-20/part-<load>.parquet``."""
    size: int
    modified_ms: int
    rows: int | None


def delta_schema(schema: pa.Schema) -> pa.Schema:
    """A lake table's columns as Delta types them: timestamps in microseconds (Delta has
    no other unit; the files keep theirs, and readers cast), without field metadata."""
    return pa.schema([
        pa.field(f.name, pa.timestamp("us", f.type.tz), f.nullable)
        if pa.types.is_timestamp(f.type) else f.remove_metadata() for f in schema])


def delta_path(partition: str, file_name: str) -> str:
    """A file's path in the Delta log, relative to the table, as delta-rs takes it: not
    percent-encoded (it encodes the path itself; one encoded before would be encoded
    twice, and no reader would find the file). The lake's partition values (ids, dates,
    compact timestamps) need no encoding either way."""
    return f"{partition}/{file_name}"


def _partition_of(path: str) -> str:
    return unquote(path).rsplit("/", 1)[0]


def _partition_values(partition: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in partition.split("/"))


def _active(table: DeltaTable, partitions: Collection[str] | None = None
            ) -> dict[str, list[tuple[str, int | None]]]:
    """partition -> its active files (path, size) in the table's snapshot, of
    ``partitions`` (None: all). (Picked out by Arrow: a table of 3 years of 200
    locations has 219,000 files, and a publication a night's few hundred partitions.)"""
    adds = pa.table(table.get_add_actions(flatten=False)).select(["path", "size_bytes"])
    if partitions is not None:
        folders = pc.replace_substring_regex(adds.column("path").cast(pa.string()),
                                             pattern="/[^/]*$", replacement="")
        either = {form for p in partitions for form in (p, quote(p, safe="/="))}
        adds = adds.filter(pc.is_in(folders, value_set=pa.array(sorted(either), pa.string())))
    found: dict[str, list[tuple[str, int | None]]] = {}
    for path, size in zip(adds.column("path").to_pylist(), adds.column("size_bytes").to_pylist(),
                          strict=True):
        found.setdefault(_partition_of(path), []).append((path, size))
    return found


def publish_table(uri: str, schema: pa.Schema, keys: list[str], files: Mapping[str, Wanted],
                  everything: bool, reread: Callable[[], Mapping[str, Wanted]],
                  publication: str, storage_options: dict[str, str] | None = None) -> int:
    """Make the Delta table at ``uri`` hold ``files`` (partition -> its file) in one
    commit, creating the table if it has no log. ``schema`` is the columns of the files
    now written (``delta_schema``): columns the table lacks are added first (older files
    answer them as null). With ``everything``, ``files`` is every committed partition,
    and partitions the table holds beyond it are removed. A commit another publication
    got in first is tried again with what ``reread`` finds then. The commit names
    ``publication`` (``PUBLICATION_KEY``), as the other tables' commits of the same
    publication do (an empty commit if the table held ``files`` already). Returns the
    partitions the commit changed."""
    # A partition key that is no column of the files (the drift record's ``detected``)
    # is one of the table's, as text: Delta readers take it from the partition's path.
    schema = pa.schema([*schema, *(pa.field(k, pa.string()) for k in keys
                                   if k not in schema.names)])
    for attempt in range(ATTEMPTS):
        if attempt:
            files = reread()
        try:
            table = DeltaTable(uri, storage_options=storage_options)
        except TableNotFoundError:
            try:
                return _create(uri, schema, keys, files, publication, storage_options)
            except DeltaError:
                if not DeltaTable.is_deltatable(uri, storage_options):
                    raise
                continue  # another publication created it first
        current = pa.schema(table.schema().to_arrow())
        added = [f.with_nullable(True) for f in schema if f.name not in current.names]
        if added:
            table.alter.add_columns(DeltaSchema.from_arrow(pa.schema(added)).fields)
            current = pa.schema([*current, *added])
        actions = _actions(_active(table, None if everything else files), files, everything)
        # With nothing to change the commit is empty, but made: every table of a
        # publication has it in its history (what a reader matches versions by).
        try:
            table.create_write_transaction(
                actions, mode="append", schema=DeltaSchema.from_arrow(current),
                partition_by=keys, commit_properties=_properties(
                    publication, len({_partition_of(a.path) for a in actions})))
        except CommitFailedError:
            continue  # another publication committed first: read both again
        return len({_partition_of(a.path) for a in actions})
    raise CommitFailedError(f"{uri}: {ATTEMPTS} commits in a row lost to other writers")


def _actions(active: dict[str, list[tuple[str, int | None]]], files: Mapping[str, Wanted],
             everything: bool) -> list[AddAction | RemoveAction]:
    """What makes the partitions hold ``files`` (and, with ``everything``, nothing else)."""
    actions: list[AddAction | RemoveAction] = []
    now = int(time.time() * 1000)
    gone = set(active) - set(files) if everything else set()
    for partition in sorted(gone | set(files)):
        want = files.get(partition)
        have = active.get(partition, [])
        keep = unquote(want.path) if want is not None else None
        if keep is not None and [unquote(p) for p, _ in have] == [keep]:
            continue
        values = _partition_values(partition)
        actions += [RemoveAction(path, True, now, size, values)
                    for path, size in have if unquote(path) != keep]
        if want is not None and keep not in {unquote(p) for p, _ in have}:
            actions.append(_add(want, values))
    return actions


def _create(uri: str, schema: pa.Schema, keys: list[str], files: Mapping[str, Wanted],
            publication: str, storage_options: dict[str, str] | None) -> int:
    create_table_with_add_actions(
        uri, DeltaSchema.from_arrow(schema),
        [_add(files[p], _partition_values(p)) for p in sorted(files)],
        mode="error", partition_by=keys, name=uri.rstrip("/").rsplit("/", 1)[-1],
        storage_options=storage_options,
        commit_properties=_properties(publication, len(files)))
    return len(files)


def _add(want: Wanted, values: dict[str, str]) -> AddAction:
    stats = json.dumps({"numRecords": want.rows}) if want.rows is not None else "{}"
    return AddAction(want.path, want.size, values, want.modified_ms, True, stats)


def _properties(publication: str, partitions: int) -> CommitProperties:
    return CommitProperties(custom_metadata={"engineApp": APP_ID, PUBLICATION_KEY: publication,
                                             "partitionsReplaced": partitions})


def versions_that_agree(uris: list[str],
                        storage_options: dict[str, str] | None = None) -> dict[str, int]:
    """Per table, the version of the newest publication all ``uris`` have: what a reader
    loads (``DeltaTable(uri, version=...)``) to see an area's tables of the same loads,
    even while a publication is under way or after one was cut short."""
    histories = [{c[PUBLICATION_KEY]: c["version"]
                  for c in DeltaTable(uri, storage_options=storage_options).history()
                  if PUBLICATION_KEY in c} for uri in uris]
    common = set.intersection(*(set(h) for h in histories))
    if not common:
        raise ValueError(f"no publication is in every one of {uris}")
    newest = max(common, key=lambda p: histories[0][p])
    return {uri: history[newest] for uri, history in zip(uris, histories, strict=True)}


class DeltaSource(Protocol):
    """What a lake gives its publication (``Lake`` and ``ObjectLake`` are one)."""

    storage_options: dict[str, str] | None
    publish_options: dict[str, str] | None
    """``storage_options`` and how delta-rs retries a publication's requests."""

    def marked(self, area: str) -> dict[str, str]:
        """The unpublished marks of ``area``: mark -> partition path."""

    def unmark(self, area: str, marks: list[str]) -> None:
        """Remove these marks (their partitions are published)."""

    def partition_paths(self, area: str, first_only: bool = False) -> list[str]:
        """Every committed partition's path (or one of them)."""

    def record(self, area: str, partition: str) -> Record | None:
        """The partition's commit record."""

    def table_uri(self, table: str) -> str:
        """Where the table and its ``_delta_log`` are."""

    def has_log(self, table: str) -> bool:
        """Does the table have a Delta log?"""

    def wanted(self, table: str, partition: str, load_id: str, rows: int | None) -> Wanted:
        """What the partition of ``table`` should hold: the file of load ``load_id``."""

    def file_schema(self, table: str, path: str) -> pa.Schema:
        """The columns of a file of ``table`` (``path`` relative to the table)."""


class Record(Protocol):
    load_id: str
    tables: list[str]

    @property
    def files(self) -> dict[str, dict]: ...


def publish_area(lake: DeltaSource, area: str, everything: bool = False) -> int:
    """Bring the Delta logs of ``area``'s tables to its commit records: the partitions
    marked unpublished, or every partition (``everything``, or for a table without a
    log: the first publication of a lake), in one commit per table, all naming one
    publication. Returns the partitions a table's commit changed, at most per table."""
    marks = lake.marked(area)
    marked = set(marks.values())
    sample = min(marked, default=None) or next(iter(lake.partition_paths(area, True)), None)
    record = lake.record(area, sample) if sample else None
    tables = list(record.tables) if record else []
    everything = everything or any(not lake.has_log(t) for t in tables)
    if not marked and not everything:
        return 0

    def records() -> dict[str, Record | None]:
        parts = lake.partition_paths(area) if everything else marked
        return {p: lake.record(area, p) for p in parts}

    def wanted(table: str, found: dict[str, Record | None]) -> dict[str, Wanted]:
        return {p: lake.wanted(table, p, r.load_id, r.files.get(table, {}).get("rows"))
                for p, r in found.items() if r is not None and table in r.tables}

    changed = 0
    found = records()
    publication = uuid.uuid4().hex
    for table in tables:
        files = wanted(table, found)
        if not files:
            continue
        newest = max(files.values(), key=lambda w: w.path.rsplit("/", 1)[-1])
        schema = delta_schema(lake.file_schema(table, unquote(newest.path)))
        keys = list(_partition_values(next(iter(files))))
        try:
            changed = max(changed, publish_table(
                lake.table_uri(table), schema, keys, files, everything,
                reread=lambda t=table: wanted(t, records()), publication=publication,
                storage_options=lake.publish_options))
        except (OSError, DeltaError) as exc:  # which table: its log, at its address
            raise OSError(f"table {table} ({lake.table_uri(table)}): {exc}") from exc
    # A mark goes once its load is published, or once it is older than any write takes
    # (its load was killed before its commit). A mark whose record is older than it is a
    # write under way: its own publication, or the next, takes it.
    stale = f"{datetime.now(UTC) - timedelta(seconds=MARK_SECONDS):%Y%m%dT%H%M%S%fZ}"
    lake.unmark(area, [mark for mark, partition in marks.items()
                       if (found.get(partition) is not None
                           and found[partition].load_id >= mark) or mark < stale])
    return changed
