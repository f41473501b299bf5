"""An area table at one version: what a reader pins (``AreaTable.snapshot``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from pipeline.lake.layout import (
    LOAD_COLUMNS,
    LoadRecord,
    as_text,
    partition_path,
    typed_value,
)
from pipeline.lake.log_check import LakeUnreadable

if TYPE_CHECKING:
    from pipeline.lake.areatable import AreaTable


@dataclass
class AreaSnapshot:
    """An area's table at one version (``version`` None: no commit yet): its active files
    as of then, whatever commits come after."""

    area_table: AreaTable
    version: int | None
    adds: pa.Table | None
    """Delta's add actions of the version (``get_add_actions(flatten=True)``)."""

    def files(self, dates: Iterable[object] | None = None) -> list[str]:
        """The active files (paths relative to the table), of ``dates`` or all."""
        if self.adds is None:
            return []
        adds = self.adds
        if dates is not None:
            key = self.area_table.layout.date_key
            kind = self.area_table.layout.keys[key]
            adds = adds.filter(pc.is_in(adds.column(f"partition.{key}"),
                                        value_set=pa.array(list(dates), kind)))
        return sorted(adds.column("path").to_pylist())

    def rows(self, columns: list[str], partitions: Sequence[Mapping[str, object]] | None
             ) -> pa.Table:
        """``columns`` of the rows of ``partitions`` (None: all), every load of each
        (two writers may have added one twice: ``records`` picks)."""
        return self._rows(columns, partitions)

    def _rows(self, columns: list[str], partitions: Sequence[Mapping[str, object]] | None
              ) -> pa.Table:
        layout = self.area_table.layout
        dates = None if partitions is None else {
            typed_value(p[layout.date_key], layout.keys[layout.date_key]) for p in partitions}
        files = self.files(dates)
        if not files:
            return pa.table({c: pa.array([], layout.schema.field(c).type) for c in columns})
        try:
            if all(not pa.types.is_list(layout.schema.field(c).type) for c in columns):
                rows = self._flat(files, columns)  # keys and loads: all files at once
            else:
                rows = pa.concat_tables([self.area_table.read_file(path, columns)
                                         for path in files])
        except FileNotFoundError as exc:
            raise self._missing(files, exc) from None
        if partitions is not None:
            wanted = {tuple(typed_value(p[k], t) for k, t in layout.keys.items())
                      for p in partitions}
            keys = list(layout.keys)
            rows = rows.filter(pa.array(
                [tuple(r.values()) in wanted for r in rows.select(keys).to_pylist()],
                pa.bool_()))
        return rows

    def _missing(self, files: list[str], exc: FileNotFoundError) -> LakeUnreadable:
        """The error naming the first of ``files`` that is not there (the one ``exc``
        met, where the store cannot tell)."""
        table = self.area_table
        fs = getattr(table.filesystem, "raw", table.filesystem)
        infos = fs.get_file_info([f"{table.root}/{f}" for f in files])
        gone = next((f for f, i in zip(files, infos, strict=True)
                     if i.type == pafs.FileType.NotFound), str(exc.filename or exc))
        return LakeUnreadable(
            f"lake table {table.uri}: its file {gone} is missing (deleted or lost; the "
            f"Delta log at version {self.version} still holds it): load its date again "
            "(pos-etl load --start/--end; the warehouse in place is kept until then), or "
            "restore the file from a backup of the lake")

    def _flat(self, files: list[str], columns: list[str]) -> pa.Table:
        """Flat columns of ``files``, read together by Arrow's dataset scanner (threads,
        each file's footer once), the date from the files' paths."""
        import pyarrow.dataset as ds  # (here: its import takes pandas, a third of a second
        # of every command that never scans)

        table = self.area_table
        layout = table.layout
        kind = layout.keys[layout.date_key]
        fs = getattr(table.filesystem, "raw", table.filesystem)
        dataset = ds.dataset([f"{table.root}/{f}" for f in files], format="parquet",
                             filesystem=fs, partition_base_dir=table.root,
                             partitioning=ds.partitioning(
                                 pa.schema([(layout.date_key, kind)]), flavor="hive"))
        return dataset.to_table(columns=columns).cast(
            pa.schema([layout.schema.field(c) for c in columns]))

    def records(self, partitions: Sequence[Mapping[str, object]] | None = None
                ) -> dict[str, LoadRecord]:
        """partition path -> its load, of ``partitions`` (None: every one). Where a
        partition has two rows (two writers added it at once), the newest load wins."""
        layout = self.area_table.layout
        keys = list(layout.keys)
        rows = self._rows([*keys, *LOAD_COLUMNS], partitions)
        found: dict[str, LoadRecord] = {}
        for row in rows.to_pylist():
            path = partition_path({k: as_text(row[k]) for k in keys})
            if path in found and found[path].load_id >= row["load_id"]:
                continue
            found[path] = LoadRecord(row["load_id"], row["loaded_at"], list(layout.tables),
                                     json.loads(row["metadata"]))
        return found

    def read(self, table: str, partition: Mapping[str, object]) -> pa.Table:
        """One partition's rows of one of the area's tables (of its newest load)."""
        layout = self.area_table.layout
        rows = self._rows([*layout.keys, "load_id", table], [partition])
        if not rows.num_rows:
            raise FileNotFoundError(f"no committed {table} in partition "
                                    f"{partition_path(partition)}")
        newest = pc.max(rows.column("load_id")).as_py()
        rows = rows.filter(pc.equal(rows.column("load_id"), newest))
        values = pc.list_flatten(rows.column(table))
        values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        nested = layout.nested(table)
        flat = pa.Table.from_arrays(values.flatten(), schema=nested) if len(values) \
            else nested.empty_table()
        schema = layout.tables[table]
        typed = {k: typed_value(v, layout.keys[k]) for k, v in partition.items()}
        return pa.table({f.name: flat.column(f.name).cast(f.type) if f.name in nested.names
                         else pa.array([typed[f.name]] * flat.num_rows, f.type)
                         for f in schema}, schema=schema)


