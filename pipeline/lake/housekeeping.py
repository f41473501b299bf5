"""Housekeeping of the lake's Delta tables: the Dagster job ``lake_housekeeping_job``, on
the weekly schedule ``weekly_lake_housekeeping``.

A load replaces a partition's one file per table (``pipeline.lake.store``), so a partition
never holds small files to compact: what grows is what replaced files leave behind.
Housekeeping, per table:

1. publishes what loads left unpublished (the marked partitions), then asks the vacuum
   which files it would delete and checks each against its partition's commit record:
   a file a record names must never go. Marks make that impossible (a mark goes only
   once its load is published), so this costs a record read per file to delete, not per
   partition of the history; should one be found anyway, every record of its area is
   published and the files asked for again;
2. vacuums: deletes the files no snapshot newer than ``lake.retention_hours`` holds (the
   files of replaced loads) and files no log names that are as old (of loads killed
   before their commit). A reader of an older snapshot, or a build that listed a file
   before it was replaced, has that long to finish;
3. writes a checkpoint of the log and removes log entries older than the log's retention
   (Delta's ``logRetentionDuration``, 30 days): a reader replays at most the commits
   since the checkpoint, and time travel reaches back that far.
"""


from dataclasses import dataclass
from urllib.parse import unquote

import pyarrow as pa
from deltalake import DeltaTable

from pipeline.lake.store import Lake, LakeStore, data_file_name


class UnpublishedFiles(Exception):
    """A table's vacuum would delete a committed file; it is left as it is."""


@dataclass(frozen=True)
class Tidied:
    """One table after housekeeping."""

    table: str
    version: int
    files: int
    """Data files its snapshot holds."""
    deleted: int
    """Files the vacuum deleted."""


def _vacuum(table: DeltaTable, retention_hours: int, dry_run: bool) -> list[str]:
    return table.vacuum(retention_hours=retention_hours, dry_run=dry_run,
                        enforce_retention_duration=False, full=True)


def committed_among(lake: LakeStore, table: str, snapshot: DeltaTable,
                    paths: list[str]) -> set[str]:
    """The areas whose commit records name one of ``paths`` (files of ``table``, relative
    to it, as Delta names them) as their partition's committed file.

    Only a file of a load newer than the one ``snapshot`` holds for its partition can be
    (load ids sort by load time, and a partition's record only moves to newer loads):
    the files replaced loads left, nearly all of ``paths``, are passed over without
    reading a record."""
    adds = pa.table(snapshot.get_add_actions(flatten=False)).column("path").to_pylist()
    newest: dict[str, str] = {}
    for path in adds:
        partition, _, name = unquote(path).rpartition("/")
        newest[partition] = max(newest.get(partition, ""), name)
    areas, every_area = set(), None
    for path in paths:
        partition, _, name = unquote(path).rpartition("/")
        if name <= newest.get(partition, ""):
            continue
        every_area = every_area if every_area is not None else lake.areas()
        for area in every_area:
            record = lake.record(area, partition)
            if record is not None and table in record.tables \
                    and data_file_name(record.load_id) == name:
                areas.add(area)
    return areas


def tidy(lake: LakeStore, retention_hours: int) -> list[Tidied]:
    """Publish, vacuum and checkpoint every Delta table of ``lake`` (see the module)."""
    for area in lake.areas():
        lake.publish(area)
    found = []
    for name in lake.delta_tables():
        uri = lake.table_uri(name)
        table = DeltaTable(uri, storage_options=lake.storage_options)
        # A committed file the log lacks would be deleted as a killed load's.
        unpublished = committed_among(lake, name, table,
                                      _vacuum(table, retention_hours, True))
        for area in sorted(unpublished):
            lake.publish(area, everything=True)
        if unpublished:
            table = DeltaTable(uri, storage_options=lake.storage_options)
            if committed_among(lake, name, table, _vacuum(table, retention_hours, True)):
                raise UnpublishedFiles(f"{lake.describe(name)}: a committed file is still "
                                       f"not in the Delta log after its publication; the "
                                       f"table was not vacuumed")
        deleted = _vacuum(table, retention_hours, False)
        table.create_checkpoint()
        table.cleanup_metadata()
        table = DeltaTable(uri, storage_options=lake.storage_options)
        found.append(Tidied(name, table.version(), len(table.file_uris()), len(deleted)))
    if isinstance(lake, Lake):
        lake.remove_stale_temp_files()
    return found
