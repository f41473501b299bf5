"""An area table's layout: its keys, its nested tables, a batch as its rows (one per
partition), and what reading older files and evolving the schema need
(``pipeline.lake.areatable`` writes and reads the table)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

LOAD_COLUMNS = ("load_id", "loaded_at", "metadata")
"""Beside the keys and the nested tables, in every row: which load wrote it, when, and
its metadata (JSON object of strings: counts, turnover, ...)."""
def new_load_id(now: datetime | None = None) -> str:
    """A unique id that sorts by load time: ``20261123T131750123456Z-1a2b3c4d``."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%S%fZ}-{uuid.uuid4().hex[:8]}"


def partition_path(partition: Mapping[str, object]) -> str:
    """A partition as ``location_id=1001/business_date=2026-11-20``: its name in the
    warehouse's bookkeeping and in messages (``parse_partition`` reads it back)."""
    return "/".join(f"{key}={value}" for key, value in partition.items())


def parse_partition(path: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in path.split("/"))


@dataclass(frozen=True)
class Replacement:
    """One partition's new content: its tables and metadata."""

    partition: Mapping[str, object]
    tables: Mapping[str, pa.Table]
    metadata: Mapping[str, object] | None = None
    load: tuple[str, datetime] | None = None
    """Its load id and time when it keeps an earlier load's (a converted lake); else the
    commit's."""


@dataclass(frozen=True)
class LoadRecord:
    """What a partition's row says of its load."""

    load_id: str
    loaded_at: datetime
    tables: list[str]
    metadata: dict[str, str]


@dataclass(frozen=True)
class Layout:
    """An area's table: its partition keys and their types, and its tables' columns."""

    keys: Mapping[str, pa.DataType]
    tables: Mapping[str, pa.Schema]
    date_key: str = ""
    """The Delta partition column: the date key (default: the first key of type date,
    else the last key)."""

    def __post_init__(self) -> None:
        if not self.date_key:
            dates = [k for k, t in self.keys.items() if pa.types.is_date(t)]
            object.__setattr__(self, "date_key", dates[0] if dates else list(self.keys)[-1])

    @property
    def sort_keys(self) -> list[str]:
        return [k for k in self.keys if k != self.date_key]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(
            [pa.field(k, t, nullable=False) for k, t in self.keys.items()]
            + [pa.field("load_id", pa.string(), False),
               pa.field("loaded_at", pa.timestamp("us", tz="UTC"), False),
               pa.field("metadata", pa.string(), False)]
            + [pa.field(name, pa.list_(pa.struct(list(self.nested(name)))), nullable=False)
               for name in self.tables])

    def nested(self, table: str) -> pa.Schema:
        """A table's columns as nested in a row: without the keys (the row has them),
        timestamps in microseconds (Delta has no other unit)."""
        schema = self.tables[table]
        return pa.schema([f.with_type(_delta_type(f.type)).remove_metadata()
                          for f in schema if f.name not in self.keys])

    def rows(self, batch: Sequence[Replacement], load_id: str, loaded_at: datetime) -> pa.Table:
        """The batch as rows of the table (one per partition)."""
        columns: dict[str, list] = {name: [] for name in self.schema.names}
        for item in batch:
            for key, kind in self.keys.items():
                columns[key].append(typed_value(item.partition[key], kind))
            columns["load_id"].append(item.load[0] if item.load else load_id)
            columns["loaded_at"].append(item.load[1] if item.load else loaded_at)
            columns["metadata"].append(json.dumps(
                {k: str(v) for k, v in (item.metadata or {}).items()}))
        arrays = [pa.array(columns[k], t) for k, t in self.keys.items()]
        arrays += [pa.array(columns["load_id"], pa.string()),
                   pa.array(columns["loaded_at"], pa.timestamp("us", tz="UTC")),
                   pa.array(columns["metadata"], pa.string())]
        for name in self.tables:
            arrays.append(_nested([item.tables[name] for item in batch], self.nested(name)))
        return pa.Table.from_arrays(arrays, schema=self.schema)


DESCRIPTION = "pos-etl lake area: a row per partition; partition keys: "
"""The table's Delta description: it names the partition keys in their order (Delta
keeps no order of its own: a schema merge moves the partition column last)."""


def layout_of_table(table: DeltaTable) -> Layout:
    """The layout of an existing area table, from its Delta schema and description."""
    schema = pa.schema(table.schema().to_arrow())
    description = table.metadata().description or ""
    names = description.removeprefix(DESCRIPTION).split(",") \
        if description.startswith(DESCRIPTION) else [
            f.name for f in schema if f.name not in LOAD_COLUMNS
            and not pa.types.is_list(f.type)]
    keys = {name: schema.field(name).type for name in names}
    tables = {f.name: pa.schema([*(pa.field(k, t, False) for k, t in keys.items()),
                                 *f.type.value_type])
              for f in schema if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)}
    return Layout(keys, tables, date_key=table.metadata().partition_columns[0])


def conform_column(column: pa.ChunkedArray | pa.Array, kind: pa.DataType) -> pa.Array:
    """A column of an older file as the table's type now: fields it lacks (a struct's,
    nested in lists too) null."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.type == kind:
        return column
    if pa.types.is_list(kind) and pa.types.is_list(column.type):
        values = conform_column(column.values if column.offset == 0 else column.flatten(),
                          kind.value_type)
        offsets = column.offsets
        if column.offset:
            offsets = pc.subtract(offsets, offsets[0])
        return pa.ListArray.from_arrays(offsets, values, type=kind,
                                        mask=column.is_null() if column.null_count else None)
    if pa.types.is_struct(kind) and pa.types.is_struct(column.type):
        have = {column.type.field(i).name: column.field(i)
                for i in range(column.type.num_fields)}
        arrays = [conform_column(have[f.name], f.type) if f.name in have
                  else pa.nulls(len(column), f.type) for f in kind]
        return pa.StructArray.from_arrays(arrays, fields=list(kind),
                                          mask=column.is_null() if column.null_count else None)
    return column.cast(kind)


def covers(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of type ``have`` holds every field of ``want`` (nested too)."""
    if pa.types.is_list(have) and pa.types.is_list(want):
        return covers(have.value_type, want.value_type)
    if pa.types.is_struct(have) and pa.types.is_struct(want):
        fields = {f.name: f.type for f in have}
        return all(f.name in fields and covers(fields[f.name], f.type) for f in want)
    return True


def _delta_type(kind: pa.DataType) -> pa.DataType:
    return pa.timestamp("us", kind.tz) if pa.types.is_timestamp(kind) else kind


def _nested(tables: list[pa.Table], schema: pa.Schema) -> pa.Array:
    """Each table as one list value of structs (its rows), in order (a column a table
    lacks is null in its rows)."""
    names = schema.names
    try:  # the usual case: every table of one schema, cast once
        flat = pa.concat_tables([t.select(names) for t in tables]).cast(schema)
    except (KeyError, pa.ArrowInvalid):
        flat = pa.concat_tables([pa.Table.from_arrays(
            [t.column(f.name).cast(f.type) if f.name in t.column_names
             else pa.nulls(t.num_rows, f.type) for f in schema], schema=schema)
            for t in tables])
    offsets = pa.array([0, *_cumulative(t.num_rows for t in tables)], pa.int32())
    structs = pa.StructArray.from_arrays(
        [flat.column(i).combine_chunks() for i in range(flat.num_columns)],
        fields=list(schema)) if flat.num_rows else pa.array([], pa.struct(list(schema)))
    return pa.ListArray.from_arrays(offsets, structs, type=pa.list_(pa.struct(list(schema))))


def _cumulative(values: Iterable[int]) -> list[int]:
    total, out = 0, []
    for v in values:
        total += v
        out.append(total)
    return out


def as_text(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


def typed_value(value: object, kind: pa.DataType) -> object:
    if pa.types.is_date(kind) and isinstance(value, str):
        return date.fromisoformat(value)
    if pa.types.is_integer(kind) and isinstance(value, str):
        return int(value)
    return value


def with_date(table: pa.Table, layout: Layout, value: str) -> pa.Table:
    kind = layout.keys[layout.date_key]
    scalar = pa.scalar(date.fromisoformat(value) if pa.types.is_date(kind) else value, kind)
    position = list(layout.keys).index(layout.date_key)
    return table.add_column(position, pa.field(layout.date_key, kind, False),
                            pa.array([scalar.as_py()] * table.num_rows, kind))
