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
        found.append(Tidied(area, delta.version(), len(delta.file_uris()), len(deleted),
                            compacted))
    return found
