"""A lake of the earlier layout, local or on object storage, converted once to one Delta
table per area.

Until this release the lake kept a table per source table, a folder per partition with a
file per load, and beside them a commit record per partition: locally
``_loads/<area>/<key>=<value>/.../load.parquet``, on a store
``_loads/<area>/<key>=<value>/.../load-<load id>.parquet`` (the newest load id of a
folder is its commit) holding the load id and time, the tables and the metadata.
``convert`` reads each committed partition (its record and the files it names), and
commits the partitions to the area's new table in batches, each keeping its load id and
time (which version of a receipt the POS moved to another day wins depends on them).
Then the old folders go.

It starts by moving the old folders into ``<lake>/_converting`` (renames locally; on a
store, where there are none, each object copied and deleted), so the new tables never
meet an old one of the same name (``vouchers`` was a table and is an area; each old
table had a Delta log of its own). Killed at any point, the next ``convert`` (the next
command that opens the lake) goes on from where the move stopped and starts the commits
again from ``_converting``: a batch committed twice keeps its load ids, so the result is
the same.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.lake.layout import Replacement, parse_partition
from pipeline.lake.store import LakeStore

OLD_RECORDS = "_loads"
OLD_MARKS = "_unpublished"
WORK = "_converting"
BATCH = 200
"""Partitions committed at once (a load's default ``commit_partitions``)."""


@dataclass(frozen=True)
class Converted:
    area: str
    partitions: int


@dataclass(frozen=True)
class Place:
    """Where a lake's files are: a pyarrow filesystem (the local one, or the store's raw
    S3 client) and the lake's folder in it."""

    fs: pafs.FileSystem
    base: str

    def kind(self, path: str) -> pafs.FileType:
        return self.fs.get_file_info(f"{self.base}/{path}").type

    def folders(self, path: str) -> list[str]:
        infos = self.fs.get_file_info(pafs.FileSelector(f"{self.base}/{path}",
                                                        allow_not_found=True))
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)

    def files(self, path: str) -> list[str]:
        """The files under ``path``, recursively, relative to it."""
        root = f"{self.base}/{path}"
        infos = self.fs.get_file_info(pafs.FileSelector(root, recursive=True,
                                                        allow_not_found=True))
        return sorted(i.path.removeprefix(f"{root}/") for i in infos
                      if i.type == pafs.FileType.File)

    def read(self, path: str):
        return pq.read_table(self.fs.open_input_file(f"{self.base}/{path}"),
                             partitioning=None)

    def move(self, name: str) -> None:
        """The folder ``name`` into ``WORK``: a rename locally; on a store each object
        copied and deleted (one already moved by a killed conversion is not there)."""
        source, target = f"{self.base}/{name}", f"{self.base}/{WORK}/{name}"
        if isinstance(self.fs, pafs.LocalFileSystem):
            self.fs.create_dir(f"{self.base}/{WORK}")
            if self.kind(f"{WORK}/{name}") == pafs.FileType.NotFound:
                self.fs.move(source, target)
                return
        for rel in self.files(name):
            with contextlib.suppress(FileNotFoundError):
                self.fs.move(f"{source}/{rel}", f"{target}/{rel}")
        with contextlib.suppress(FileNotFoundError, OSError):
            self.fs.delete_dir(source)


def place_of(lake: LakeStore) -> Place:
    """Where ``lake``'s files are (``Lake``: its folder; ``ObjectLake``: its bucket)."""
    from pipeline.lake.objectlake import ObjectLake

    if isinstance(lake, ObjectLake):
        return Place(lake.fs, lake.base)
    return Place(pafs.LocalFileSystem(), str(lake.root.resolve()))


def needs_conversion(place: Place) -> bool:
    """Whether the lake is of the earlier layout (or a conversion was cut)."""
    return any(place.kind(name) == pafs.FileType.Directory for name in (OLD_RECORDS, WORK))


def convert(lake: LakeStore, say: Callable[[str], None] = lambda line: None
            ) -> list[Converted]:
    """Convert the lake (see the module); returns what each area got. Nothing to do:
    an empty list."""
    place = place_of(lake)
    if not needs_conversion(place):
        return []
    if place.kind(OLD_RECORDS) == pafs.FileType.Directory:
        tables = _old_tables(place, OLD_RECORDS)
        for name in [*sorted(tables), OLD_RECORDS]:  # the records last: what says "old"
            if place.kind(name) == pafs.FileType.Directory:
                place.move(name)
    done = []
    for area in place.folders(f"{WORK}/{OLD_RECORDS}"):
        if area == OLD_MARKS:
            continue
        count = 0
        batch: list[Replacement] = []
        # a partition a load of this release committed already (a conversion cut midway
        # and commands run meanwhile) keeps its newer load
        newer = {path: record.load_id for path, record in lake.records(area).items()}
        for replacement in _partitions(place, area, newer):
            batch.append(replacement)
            if len(batch) == BATCH:
                lake.write_batch(area, batch)
                count += len(batch)
                batch = []
        if batch:
            lake.write_batch(area, batch)
            count += len(batch)
        say(f"lake: {area}: {count:,} partitions converted")
        done.append(Converted(area, count))
    place.fs.delete_dir(f"{place.base}/{WORK}")
    return done


def _records(place: Place, folder: str) -> dict[str, str]:
    """partition -> its commit record (the newest load's, on a store), of the area
    records in ``folder``."""
    found: dict[str, str] = {}
    for rel in place.files(folder):
        partition, _, name = rel.rpartition("/")
        record = name == "load.parquet" or (name.startswith("load-")
                                            and name.endswith(".parquet"))
        if record and (partition not in found or found[partition].rsplit("/", 1)[-1] < name):
            found[partition] = f"{folder}/{rel}"
    return found


def _old_tables(place: Place, records: str) -> set[str]:
    """The table folders the old records name."""
    names = set()
    for area in place.folders(records):
        if area == OLD_MARKS:
            continue
        record = next(iter(_records(place, f"{records}/{area}").values()), None)
        if record is not None:
            names |= set(place.read(record).column("tables")[0].as_py())
    return names


def _partitions(place: Place, area: str, newer: dict[str, str]) -> Iterator[Replacement]:
    records = _records(place, f"{WORK}/{OLD_RECORDS}/{area}")
    for partition in sorted(records):
        record = place.read(records[partition]).to_pylist()[0]
        if newer.get(partition, "") > record["load_id"]:
            continue
        metadata = json.loads(record["metadata"])
        metadata.pop("files", None)  # the old digests: the new files carry page CRCs
        tables = {name: place.read(f"{WORK}/{name}/{partition}/part-{record['load_id']}"
                                   f".parquet")
                  for name in record["tables"]}
        yield Replacement(parse_partition(partition), tables, metadata,
                          (record["load_id"], record["loaded_at"]))
