"""An area's Delta table: a row per partition, its tables nested in it, Delta the only commit.

An area (``pipeline.areas``: revenue, a catalog snapshot, the ledger, ...) writes
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
A commit whose outcome is unknown (its answer lost on the way back, so the store's
client retried and found the version taken, or the store failing for good) is settled
by the log: a version after the one it started from that adds its files (their names
are the attempt's own) means it landed. A writer deletes no file: one that no version
names is vacuum's (housekeeping).
Two writers of different partitions therefore both commit, each retried on the other's
version. Two writers of the **same** partition: the later commit wins whole
(``Committed.overtook`` names the other load's copy it replaced, and the load says so).
Where both replaced a file, the later one lost the race, read the first one's version and
removed its copy; where both added the partition's first row (no file to remove, so no
conflict) the later one finds the other's row in the versions between its base and its
own, and removes it by a commit of its own (``DEDUPE``): the table then holds each
partition once. (Between the two commits readers take the newest ``load_id`` of a
partition, ``AreaSnapshot.records``: an attempt's id is taken as it writes its files.)

A snapshot (``AreaSnapshot``) is the table at one version: what a reader pins.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import DeltaTable, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, CommitProperties, RemoveAction

from pipeline.lake.areafiles import files_of, read_file, write_files
from pipeline.lake.layout import (
    DESCRIPTION,
    Layout,
    Replacement,
    as_text,
    covers,
    layout_of_table,
    new_load_id,
    partition_path,
)
from pipeline.lake.log_check import unreadable

if TYPE_CHECKING:
    from pipeline.lake.snapshot import AreaSnapshot

ATTEMPTS = 8
"""How often a commit is written again after losing to another writer."""
APP_ID = "pos-etl"
"""In the ``commitInfo`` of our commits: who wrote them."""
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
        except DeltaError as exc:
            broken = unreadable(self.filesystem, self.root, self.uri, exc)
            if broken is not None:
                raise broken from None
            raise
        if version is None:
            self._table = table
        return table

    def snapshot(self, version: int | None = None) -> AreaSnapshot:
        """The table at ``version`` (else the newest): what a reader pins."""
        from pipeline.lake.snapshot import AreaSnapshot

        with self._lock:
            table = self._open(version)
            if table is None:
                return AreaSnapshot(self, None, None)
            return AreaSnapshot(self, table.version(),
                                pa.table(table.get_add_actions(flatten=True)))

    # --- writing ------------------------------------------------------------------

    def commit(self, batch: Sequence[Replacement], operation: str = "WRITE",
               load_id: str | None = None) -> Committed:
        """Replace the batch's partitions in one Delta commit: its version, and the
        partitions another writer committed while this one did (replaced: the later commit
        wins whole). Rows of other partitions in the files this removes are written again.
        """
        if not batch:
            raise ValueError("an empty batch")
        with self._lock:
            return self._commit(batch, operation, load_id)

    def _commit(self, batch: Sequence[Replacement], operation: str,
                load_id: str | None) -> Committed:
        given = load_id
        load_id = given or new_load_id()
        rows = self.layout.rows(batch, load_id, datetime.now(UTC))
        replaced = _partition_set(rows, list(self.layout.keys))
        before: dict[tuple, str] | None = None  # partition -> its load, as first found
        for attempt in range(ATTEMPTS):
            if attempt and not given:  # this attempt's id: newer than what it lost to
                fresh = new_load_id()
                rows, load_id = _with_load_id(rows, load_id, fresh), fresh
            table = self.open()
            if table is None:
                table = self._create()
            base = table.version()
            removed, kept, held = self._displaced(table, rows, replaced)
            before = held if before is None else before
            written = self._write_files(pa.concat_tables([rows, *kept]) if kept else rows,
                                        load_id, attempt)
            actions: list[AddAction | RemoveAction] = [*removed, *written]
            overtook = {_path(self.layout, p): other for p, other in held.items()
                        if before.get(p) != other}
            try:
                self._commit_actions(table, actions, load_id, operation, len(replaced))
            except CommitFailedError:
                # Lost to another writer, or to itself: a commit that reached the store
                # and whose answer did not come back is retried by the store's client
                # and finds its own version there. The log says which.
                self._table = None
                landed = self._landed(written, base)
                if landed is not None:
                    return self._settled(Committed(landed, load_id, overtook), base, written,
                                         replaced)
                # Never committed: its files stay for housekeeping's vacuum (a writer
                # deletes nothing that a version might name).
                time.sleep(random.uniform(0.01, 0.05) * 2 ** min(attempt, 5))
                continue
            except Exception:
                # The outcome is not known (the store failed for good): if the log
                # holds this load's version, it landed.
                self._table = None
                with contextlib.suppress(Exception):
                    landed = self._landed(written, base)
                    if landed is not None:
                        return self._settled(Committed(landed, load_id, overtook), base, written,
                                             replaced)
                raise
            except BaseException:
                self._table = None
                raise
            version = self._version_of(written, base)
            return self._settled(Committed(version, load_id, overtook), base, written, replaced)
        raise CommitFailedError(f"{self.uri}: {ATTEMPTS} commits in a row lost to other "
                                f"writers")

    def _settled(self, committed: Committed, base: int, written: Sequence[AddAction],
                 replaced: set[tuple]) -> Committed:
        """``committed`` once no other row of its partitions is left from a commit
        between ``base`` and it: another writer that added a partition's first row while
        this one did (no file to remove, so no conflict). This commit is the later one: it
        wins, the other row is removed by a commit of its own."""
        if committed.version <= base + 1:  # nobody committed in between
            return committed
        table = self._open(committed.version)
        ours = {a.path for a in written}
        adds = pa.table(table.get_add_actions(flatten=True))
        adds = adds.filter(pc.invert(pc.is_in(adds.column("path"),
                                              value_set=pa.array(sorted(ours), pa.string()))))
        others: dict[tuple, str] = {}
        for path, _, _ in files_of(self.layout, adds, replaced):
            for row in self.read_file(path, [*self.layout.keys, "load_id"]).to_pylist():
                load = row.pop("load_id")
                if tuple(row.values()) in replaced:
                    others[tuple(row.values())] = load
        if not others:
            return committed
        # (a cleanup that lost 8 times in a row leaves the row: readers still take the
        # newest load, and the day's next commit removes the other)
        with contextlib.suppress(CommitFailedError):
            self._drop(others)
        return Committed(committed.version, committed.load_id, committed.overtook | {
            _path(self.layout, p): other for p, other in others.items()})

    def _drop(self, rows: dict[tuple, str]) -> None:
        """Remove the rows of these partitions that carry these loads (an earlier
        commit's copies), rewriting the other rows of their files; a commit of its own."""
        keys = list(self.layout.keys)
        for _attempt in range(ATTEMPTS):
            table = self.open()
            adds = pa.table(table.get_add_actions(flatten=True))
            removed, kept = [], []
            now = int(time.time() * 1000)
            date_key = self.layout.date_key
            for path, size, value in files_of(self.layout, adds, set(rows)):
                held = self.read_file(path, [*keys, "load_id"]).to_pylist()
                gone = pa.array([rows.get(tuple(r[k] for k in keys)) == r["load_id"]
                                 for r in held], pa.bool_())
                if not pc.any(gone).as_py():
                    continue
                removed.append(RemoveAction(path, True, now, size, {date_key: value}))
                if not pc.all(gone).as_py():
                    others = self.read_file(path).filter(pc.invert(gone))
                    kept.append(others.select(self.layout.schema.names)
                                .cast(self.layout.schema))
            if not removed:
                return
            load_id = new_load_id()
            written = self._write_files(pa.concat_tables(kept), load_id) if kept else []
            base = table.version()
            try:
                self._commit_actions(table, [*removed, *written], load_id, "DEDUPE",
                                     len(rows))
                return
            except CommitFailedError:
                self._table = None
                if self._landed(written, base) is not None:
                    return
                time.sleep(random.uniform(0.01, 0.05))
        raise CommitFailedError(f"{self.uri}: {ATTEMPTS} commits in a row lost to other "
                                f"writers")

    def _version_of(self, written: Sequence[AddAction], base: int) -> int:
        """The version this process just committed on ``base`` (Delta's own commit may
        have taken a later one: it retries a blind append on the versions other writers
        took meanwhile, with no error): the newest, or the one that added ``written``."""
        newest = self._open(None).version()
        if newest > base + 1:
            return self._landed(written, base) or newest
        return newest

    def _landed(self, written: Sequence[AddAction], base: int) -> int | None:
        """The version after ``base`` that added the files ``written`` (their names are
        this attempt's alone, so only its own commit adds them), if any: the first that
        holds them (a later one may have removed them again: a writer of the same
        partition that committed after it)."""
        newest = self._open(None)
        if newest is None or newest.version() <= base or not written:
            return None
        path = written[0].path
        for version in range(base + 1, newest.version() + 1):
            table = newest if version == newest.version() else self._open(version)
            if table is not None and path in table.get_add_actions(flatten=True).column(
                    "path").to_pylist():
                return version
        return None

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
            if all(covers(have.field(f.name).type, f.type) if f.name in have.names
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
                                        {self.layout.date_key: as_text(r[column])})
                           for r in chosen.to_pylist()]
                rows = pa.concat_tables([
                    self.read_file(path).select(self.layout.schema.names)
                    .cast(self.layout.schema) for path in chosen.column("path").to_pylist()])
                load_id = new_load_id()
                written = self._write_files(rows, load_id)
                base = table.version()
                try:
                    table.create_write_transaction(
                        [*removed, *written], mode="append",
                        schema=DeltaSchema.from_arrow(self.layout.schema),
                        partition_by=[self.layout.date_key],
                        commit_properties=CommitProperties(custom_metadata={
                            "engineApp": APP_ID, "posEtlOperation": "COMPACT",
                            "datesCompacted": len(dates)}))
                except CommitFailedError:  # a load committed meanwhile: look again
                    self._table = None  # (its files, if not committed, stay for vacuum)
                    if self._landed(written, base) is None:
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
                   ) -> tuple[list[RemoveAction], list[pa.Table], dict[tuple, str]]:
        """The files of the batch's dates that hold a partition it replaces (removed),
        their rows of other partitions (written again), and the load of each replaced
        partition they hold."""
        adds = pa.table(table.get_add_actions(flatten=True))
        date_key = self.layout.date_key
        removed, kept, held = [], [], {}
        now = int(time.time() * 1000)
        keys = list(self.layout.keys)
        for path, size, value in files_of(self.layout, adds, replaced):
            found = self.read_file(path, [*keys, "load_id"]).to_pylist()
            mine = []
            for row in found:
                load = row.pop("load_id")
                partition = tuple(row.values())
                mine.append(partition in replaced)
                if mine[-1]:
                    held[partition] = max(load, held.get(partition, load))
            if not any(mine):
                continue
            removed.append(RemoveAction(path, True, now, size, {date_key: value}))
            if not all(mine):
                others = self.read_file(path).filter(pc.invert(pa.array(mine, pa.bool_())))
                kept.append(others.select(self.layout.schema.names).cast(self.layout.schema))
        return removed, kept, held

    def read_file(self, path: str, columns: list[str] | None = None) -> pa.Table:
        """A file of the table (``columns`` of it), its pages' CRCs verified."""
        return read_file(self.filesystem, self.root, self.layout, path, columns)

    def _write_files(self, rows: pa.Table, load_id: str, attempt: int = 0
                     ) -> list[AddAction]:
        stem = load_id if not attempt else f"{load_id}-r{attempt}"
        return write_files(self.filesystem, self.root, self.layout, rows, stem)


def _partition_set(rows: pa.Table, keys: list[str]) -> set[tuple]:
    return {tuple(r.values()) for r in rows.select(keys).to_pylist()}


@dataclass(frozen=True)
class Committed:
    """A commit's version, and the partitions of it another writer had committed while
    this one did (``location_id=1001/business_date=2026-11-20`` -> that load's id): this
    commit, the later one, replaced them whole."""

    version: int
    load_id: str
    """The load id its rows carry."""
    overtook: dict[str, str] = field(default_factory=dict)


def _path(layout: Layout, partition: tuple) -> str:
    return partition_path({k: as_text(v) for k, v in zip(layout.keys, partition, strict=True)})


def _with_load_id(rows: pa.Table, old: str, new: str) -> pa.Table:
    """``rows`` with the load ``old`` renamed ``new`` (rows that keep an earlier load of
    their own, a moved receipt's day, keep it)."""
    column = rows.column("load_id")
    index = rows.schema.get_field_index("load_id")
    return rows.set_column(index, "load_id", pc.if_else(pc.equal(column, old),
                                                        pa.scalar(new), column))

