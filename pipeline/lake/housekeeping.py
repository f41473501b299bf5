"""Housekeeping of the lake's Delta tables: the Dagster job ``lake_housekeeping_job``, on
the weekly schedule ``weekly_lake_housekeeping``, and ``pos-etl housekeeping``.

A load writes a file per date of each batch (``pipeline.lake.areatable``), so a date
loaded by several loads (a night's lookback of some locations, a reload of one) is held
in several files, and replaced files stay on disk for readers of older versions. Per
area table:

1. compacts: every date held in more than one file is rewritten as one (sorted by
   location, with statistics and page CRCs), in commits of up to 64 dates;
2. vacuums: deletes the files no version newer than ``lake.retention_hours`` holds (those
   replaced or compacted away) and files no log names that are as old (of loads killed
   before their commit). A reader of an older version, or a build that pinned one, has
   that long to finish;
3. writes a checkpoint of the log and removes log entries older than the log's retention
   (Delta's ``logRetentionDuration``, 30 days): a reader replays at most the commits
   since the checkpoint, and time travel reaches back that far.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow.fs as pafs

from pipeline.lake.store import LakeStore


@dataclass(frozen=True)
class Tidied:
    """One area's table after housekeeping."""

    table: str
    version: int
    files: int
    """Data files its newest version holds."""
    deleted: int
    """Files the vacuum deleted."""
    compacted: int = 0
    """Dates rewritten as one file."""
    waiting: int = 0
    """Files no newest version holds that are younger than the retention: kept for
    readers of older versions, removed by a housekeeping after ``removable_after``."""
    waiting_bytes: int = 0
    removable_after: datetime | None = None
    """When every waiting file is older than the retention (at the latest)."""

    def line(self) -> str:
        """What a person reads: what was done, and what is kept and till when."""
        said = (f"{self.table}: version {self.version}, {self.files} files, "
                f"{self.compacted} dates compacted, {self.deleted} deleted, checkpointed")
        if self.waiting and self.removable_after is not None:
            said += (f"; {self.waiting} replaced or compacted files "
                     f"({self.waiting_bytes / 2**20:,.1f} MB) kept for readers of older "
                     f"versions, removable by the first housekeeping after "
                     f"{self.removable_after:%Y-%m-%d %H:%M} UTC")
        return said


def tidy(lake: LakeStore, retention_hours: int) -> list[Tidied]:
    """Compact, vacuum and checkpoint every area's table of ``lake`` (see the module)."""
    found = []
    for area in lake.areas():
        table = lake.area_table(area)
        if table is None:
            continue
        compacted = table.compact()
        delta = table.open()
        deleted = delta.vacuum(retention_hours=retention_hours, dry_run=False,
                               enforce_retention_duration=False, full=True)
        delta.create_checkpoint()
        delta.cleanup_metadata()
        delta = table.open()
        candidates = delta.vacuum(retention_hours=0, dry_run=True,
                                  enforce_retention_duration=False, full=True)
        fs = getattr(table.filesystem, "raw", table.filesystem)
        waiting = [i for i in fs.get_file_info(
            [f"{table.root}/{_relative(path, table.uri)}" for path in candidates])
            if i.type == pafs.FileType.File] if candidates else []
        found.append(Tidied(area, delta.version(), len(delta.file_uris()), len(deleted),
                            compacted, len(waiting), sum(i.size or 0 for i in waiting),
                            datetime.now(UTC) + timedelta(hours=retention_hours)
                            if waiting else None))
    return found


def _relative(path: str, uri: str) -> str:
    """A vacuum's file path (relative to the table, or a full URI) as relative."""
    base = uri.rstrip("/") + "/"
    return path[len(base):] if path.startswith(base) else path.lstrip("/")
