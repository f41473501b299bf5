"""A local lake of the earlier layout, converted once to one Delta table per area.

Until this release the lake kept a table per source table, a folder per partition with a
file per load, and beside them a commit record per partition
(``_loads/<area>/<key>=<value>/.../load.parquet``: the load id and time, the tables, the
metadata). ``convert`` reads each committed partition (its record and the files it
names), and commits the partitions to the area's new table in batches, each keeping
its load id and time (which version of a receipt the POS moved to another day wins
depends on them). Then the old folders go.

It starts by moving the old folders into ``<lake>/_converting`` (renames), so the new
tables never meet an old one of the same name (``vouchers`` was a table and is an area).
Killed at any point, the next ``convert`` (``pos-etl lake convert``, or the next command
that opens the lake) starts again from ``_converting``: a batch committed twice keeps
its load ids, so the result is the same. A lake on object storage is not converted
(none was in production with the earlier layout).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.lake.layout import Replacement, parse_partition
from pipeline.lake.store import Lake

OLD_RECORDS = "_loads"
OLD_MARKS = "_unpublished"
WORK = "_converting"
BATCH = 200
"""Partitions committed at once (a load's default ``commit_partitions``)."""


@dataclass(frozen=True)
class Converted:
    area: str
    partitions: int


def needs_conversion(root: Path) -> bool:
    """Whether the lake at ``root`` is of the earlier layout (or a conversion was cut)."""
    return (root / OLD_RECORDS).is_dir() or (root / WORK).is_dir()


def convert(lake: Lake, say: Callable[[str], None] = lambda line: None) -> list[Converted]:
    """Convert the lake (see the module); returns what each area got. Nothing to do:
    an empty list."""
    root = lake.root
    if not needs_conversion(root):
        return []
    work = root / WORK
    if (root / OLD_RECORDS).is_dir():
        work.mkdir(exist_ok=True)
        tables = _old_tables(root / OLD_RECORDS)
        for name in [OLD_RECORDS, *sorted(tables)]:
            if (root / name).is_dir():
                (root / name).rename(work / name)
    done = []
    for area_dir in sorted(p for p in (work / OLD_RECORDS).iterdir()
                           if p.is_dir() and p.name != OLD_MARKS):
        count = 0
        batch: list[Replacement] = []
        for replacement in _partitions(work, area_dir):
            batch.append(replacement)
            if len(batch) == BATCH:
                lake.write_batch(area_dir.name, batch)
                count += len(batch)
                batch = []
        if batch:
            lake.write_batch(area_dir.name, batch)
            count += len(batch)
        say(f"lake: {area_dir.name}: {count:,} partitions converted")
        done.append(Converted(area_dir.name, count))
    shutil.rmtree(work)
    return done


def _old_tables(records: Path) -> set[str]:
    """The table folders the old records name."""
    names = set()
    for area_dir in records.iterdir():
        if area_dir.is_dir() and area_dir.name != OLD_MARKS:
            record = next(area_dir.glob("**/load.parquet"), None)
            if record is not None:
                names |= set(pq.read_table(record, columns=["tables"]).column(
                    "tables")[0].as_py())
    return names


def _partitions(work: Path, area_dir: Path) -> Iterator[Replacement]:
    for record_path in sorted(area_dir.glob("**/load.parquet")):
        partition = record_path.parent.relative_to(area_dir).as_posix()
        record = pq.read_table(record_path).to_pylist()[0]
        metadata = json.loads(record["metadata"])
        metadata.pop("files", None)  # the old digests: the new files carry page CRCs
        tables = {name: pq.read_table(work / name / partition / f"part-{record['load_id']}"
                                      f".parquet", partitioning=None)
                  for name in record["tables"]}
        yield Replacement(parse_partition(partition), tables, metadata,
                          (record["load_id"], record["loaded_at"]))
