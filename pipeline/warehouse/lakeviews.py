"""The lake as the build reads it: committed loads only, as views over their files.

The views live in an in-memory catalog named ``lake`` that the build attaches beside the
warehouse it writes, so a model's ``lake.<table>`` resolves to them while it is computed
and nothing of them is stored in the warehouse file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from pipeline.lake.store import parse_partition
from pipeline.warehouse.models import LAKE_AREAS, LAKE_LOADS, LAKE_SCHEMA

if TYPE_CHECKING:
    from pipeline.warehouse.lakefiles import LakeFiles

LOAD_COLUMNS = pa.schema([pa.field("load_id", pa.string()),
                          pa.field("loaded_at", pa.timestamp("us", tz="UTC"))])
"""What every lake view adds to its table's columns: the committed load the row is from."""
LOADS_SCHEMA = pa.schema([("location_id", pa.int32()), ("business_date", pa.date32()),
                         ("load_id", pa.string()), ("loaded_at", pa.timestamp("us", "UTC")),
                         ("receipts", pa.int64())])
"""``lake.revenue_loads`` (``LAKE_LOADS``): one row per committed revenue partition."""
SUPERSEDED_SCHEMA = pa.schema([("partition", pa.string()), ("transaction_id", pa.string())])
KEYS_FILES_AT_ONCE = 64
"""Revenue files (a date's each) whose receipt keys a build reads in one statement: what
bounds the memory of reading a long history's keys."""
KEYS_COLUMNS = ("partition varchar, load_id varchar, location_id bigint, business_date date, "
                "transaction_id varchar, loaded_at timestamptz")


def sql_path(path: Path | str) -> str:
    """A path as the content of a SQL string literal (its quotes doubled)."""
    return str(path).replace("'", "''")


def file_list(files: list[str]) -> str:
    """Files as a DuckDB list of string literals."""
    return "[" + ", ".join(f"'{sql_path(f)}'" for f in files) + "]"


def arrow_insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple],
                 schema: pa.Schema) -> None:
    """Create ``table`` (if new) and add ``rows`` through Arrow (executemany is slow)."""
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    data = pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema,
                                                                             strict=True)],
                                schema=schema)
    con.register("_arrow_rows", data)
    try:
        con.execute(f"create table if not exists {table} as "
                    f"select * from _arrow_rows limit 0")
        con.execute(f"insert into {table} by name select * from _arrow_rows")
    finally:
        con.unregister("_arrow_rows")


@dataclass(frozen=True)
class Committed:
    """The committed loads of one lake area at the version a build pinned: partition
    (``location_id=1001/business_date=2026-11-20``) -> its load, and the files holding
    them (a file per date and load, shared by the partitions of a date)."""

    loads: dict[str, tuple[str, object, tuple[str, ...], str]]
    """partition -> (load id, loaded at, tables, metadata as JSON)."""
    keys: tuple[str, ...] = ()
    date_key: str = ""
    date_type: str = "DATE"
    """The date key's DuckDB type (what its Hive path value is read as)."""
    files_by_date: dict[str, list[str]] = field(default_factory=dict)
    """date (as in a partition's path) -> the files holding it, as DuckDB opens them."""
    version: int | None = None

    def metadata(self, partition: str) -> dict[str, str]:
        """The metadata its load recorded (``Lake.write``)."""
        return json.loads(self.loads[partition][3])

    def without(self, partitions: set[str]) -> Committed:
        """These loads but ``partitions``'."""
        return replace(self, loads={p: load for p, load in self.loads.items()
                                    if p not in partitions})

    def files(self, partitions: Iterable[str] | None = None) -> list[str]:
        """The files holding ``partitions`` (None: every committed one)."""
        parts = self.loads if partitions is None else partitions
        dates = {parse_partition(p)[self.date_key] for p in parts}
        return sorted(f for d in dates for f in self.files_by_date.get(d, ()))

    def partition_sql(self, alias: str) -> str:
        """A row's partition, as SQL over its key columns."""
        return " || '/' || ".join(f"'{k}=' || cast({alias}.{k} as varchar)" for k in self.keys)

    def rows_sql(self, columns: str, partitions: Iterable[str] | None, parts_table: str,
                 alias: str = "r") -> str:
        """SQL selecting ``columns`` from the rows (one per partition) of ``partitions``
        (None: all) of their committed loads; ``parts_table`` (partition, load_id) lists
        them (``parts_rows``)."""
        files = self.files(partitions)
        return f"""
            select {columns}
            from read_parquet({file_list(files)}, hive_partitioning = true, union_by_name = true,
                              hive_types = {{'{self.date_key}': {self.date_type}}}) as {alias}
            semi join {parts_table} as p
                on p.partition = {self.partition_sql(alias)} and p.load_id = {alias}.load_id"""

    def parts_rows(self, partitions: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """(partition, load id) of ``partitions`` (None: all), for ``rows_sql``."""
        parts = self.loads if partitions is None else partitions
        return [(p, self.loads[p][0]) for p in sorted(parts) if p in self.loads]


PARTS_SCHEMA = pa.schema([("partition", pa.string()), ("load_id", pa.string())])


def _duckdb_type(kind: pa.DataType) -> str:
    if pa.types.is_date(kind):
        return "DATE"
    if pa.types.is_integer(kind):
        return "BIGINT"
    return "VARCHAR"


def committed_loads(con: duckdb.DuckDBPyConnection, files: LakeFiles) -> dict[str, Committed]:
    """Every area's committed partitions at its newest version (pinned: the build reads
    exactly these), read from the rows' keys and load columns in one pass per area."""
    found = {}
    for area, snapshot in files.snapshots(LAKE_AREAS).items():
        if snapshot is None or not snapshot.files():
            found[area] = Committed({})
            continue
        layout = snapshot.area_table.layout
        by_date: dict[str, list[str]] = {}
        for rel in snapshot.files():
            value = parse_partition(rel.rsplit("/", 1)[0])[layout.date_key]
            by_date.setdefault(value, []).append(files.path(area, rel))
        _all_there(files, area, snapshot)
        committed = Committed({}, tuple(layout.keys), layout.date_key,
                              _duckdb_type(layout.keys[layout.date_key]), by_date,
                              snapshot.version)
        every = sorted(f for fs in by_date.values() for f in fs)
        rows = con.execute(f"""
            select {committed.partition_sql('r')} as partition, load_id, loaded_at, metadata
            from read_parquet({file_list(every)}, hive_partitioning = true, union_by_name = true,
                              hive_types = {{'{layout.date_key}': {committed.date_type}}}) as r
            qualify row_number() over (partition by partition order by load_id desc) = 1
            """).fetchall()
        tables = tuple(layout.tables)
        found[area] = replace(committed, loads={
            part: (load_id, loaded_at, tables, metadata)
            for part, load_id, loaded_at, metadata in rows})
    return found


class MissingLakeFile(Exception):
    """A file the pinned version of an area's table holds is not there: deleted or lost.
    The build stops and keeps the warehouse in place."""


def _all_there(files: LakeFiles, area: str, snapshot) -> None:
    """Every file of the version exists, or ``MissingLakeFile`` names the first missing
    one with its date and the range of the other keys its statistics give."""
    layout = snapshot.area_table.layout
    missing = set(files.missing(area, [files.path(area, p) for p in snapshot.files()]))
    for row in snapshot.adds.to_pylist():
        if files.path(area, row["path"]) not in missing:
            continue
        where = []
        for key in layout.sort_keys:
            low, high = row.get(f"min.{key}"), row.get(f"max.{key}")
            if low is not None:
                where.append(f"{key} {low}" if low == high else f"{key} {low}..{high}")
        where.append(f"{layout.date_key} {row[f'partition.{layout.date_key}']}")
        raise MissingLakeFile(
            f"lake {area} partition {', '.join(where)}: its file {row['path']} is missing "
            f"(deleted or lost; the Delta log still holds it): the warehouse in place is "
            f"kept; load the date again (pos-etl load --start/--end) to replace it")


def superseded_receipts(con: duckdb.DuckDBPyConnection, revenue: Committed,
                        keys_table: str, deleted: Callable[[duckdb.DuckDBPyConnection, int], None]
                        ) -> dict[str, list[str]]:
    """Receipts a newer load holds in another partition (the POS moved them to another
    day): partition -> their transaction ids. Staging keeps the newest version only.

    The keys of every committed receipt are kept in the warehouse (``keys_table``): a
    build drops those of loads no longer committed (telling ``deleted`` how many) and
    reads only the partitions loaded since from the lake.
    """
    con.execute(f"create table if not exists {keys_table} ({KEYS_COLUMNS})")
    current = [(part, load[0], load[1]) for part, load in revenue.loads.items()]
    arrow_insert(con, "committed_receipts", current, pa.schema(
        [("partition", pa.string()), ("load_id", pa.string()),
         ("loaded_at", pa.timestamp("us", "UTC"))]))
    deleted(con, con.execute(f"""
        delete from {keys_table} as k where not exists (
            select 1 from committed_receipts as c
            where c.partition = k.partition and c.load_id = k.load_id)""").fetchone()[0])
    known = {row[0] for row in con.execute(
        f"select distinct partition from {keys_table}").fetchall()}
    new = [p for p in revenue.loads if p not in known]
    dates: dict[str, list[str]] = {}
    for part in new:
        dates.setdefault(parse_partition(part)[revenue.date_key], []).append(part)
    chunk: list[str] = []
    for day in sorted(dates):  # a bounded number of files at once
        chunk += dates[day]
        if len(revenue.files(chunk)) >= KEYS_FILES_AT_ONCE or day == max(dates):
            arrow_insert(con, "_new_parts", revenue.parts_rows(chunk), PARTS_SCHEMA)
            con.execute(f"""
                insert into {keys_table}
                select partition, load_id, location_id, business_date,
                       _receipt.transaction_id, loaded_at
                from ({revenue.rows_sql(
                    f"{revenue.partition_sql('r')} as partition, r.load_id, r.location_id, "
                    "r.business_date, unnest(r.receipts) as _receipt, r.loaded_at", chunk,
                    "_new_parts")})""")
            con.execute("drop table _new_parts")
            chunk = []
    con.execute("drop table committed_receipts")
    # Only receipts found more than once are ranked (a hash aggregate over every key,
    # not a sort of them all).
    return dict(con.execute(f"""
        with twice as (
            select location_id, transaction_id from {keys_table}
            group by all having count(*) > 1
        ), ranked as (
            select partition, transaction_id,
                   row_number() over (
                       partition by location_id, transaction_id
                       order by loaded_at desc, business_date desc) as n
            from {keys_table} semi join twice using (location_id, transaction_id)
        )
        select partition, list(transaction_id order by transaction_id)
        from ranked where n > 1 group by partition""").fetchall())


def create_lake_views(con: duckdb.DuckDBPyConnection,
                      committed: dict[str, Committed], superseded: dict[str, list[str]],
                      partitions: dict[str, set[str] | None]) -> None:
    """A view per lake table over the rows of committed loads (``pipeline.lake.store``),
    their nested table unnested, in a new in-memory catalog ``lake``: of the areas in
    ``partitions``, their partitions named there (None: all); the other areas' tables
    are empty. Receipts another partition took over are left out, with their lines,
    payments and side dishes."""
    drop_lake_views(con)
    con.execute(f"attach ':memory:' as {LAKE_SCHEMA}")
    lake = f"{LAKE_SCHEMA}.main"
    arrow_insert(con, f"{lake}._superseded",
                 [(part, t) for part, ids in superseded.items() for t in ids], SUPERSEDED_SCHEMA)
    for area, tables in LAKE_AREAS.items():
        area_loads = committed.get(area, Committed({}))
        wanted = partitions.get(area, set())
        parts = area_loads.parts_rows(wanted)
        arrow_insert(con, f"{lake}._parts_{area}", parts, PARTS_SCHEMA)
        for table, schema in tables.items():
            empty = pa.schema([*schema, *LOAD_COLUMNS]).empty_table()
            # the table's columns and types, whatever the files hold
            arrow_insert(con, f"{lake}._columns_{table}", [], empty.schema)
            if not parts:
                con.execute(f"create view {lake}.{table} as "
                            f"select * from {lake}._columns_{table}")
                continue
            keys = ", ".join(f"r.{k}" for k in area_loads.keys)
            rows = area_loads.rows_sql(
                f"{keys}, r.load_id, r.loaded_at, "
                f"{area_loads.partition_sql('r')} as _partition, "
                f"unnest(r.{table}) as _row",
                [p for p, _ in parts], f"{lake}._parts_{area}")
            taken_over = ""
            if area == "revenue":  # a receipt's lines, payments, side dishes go with it
                taken_over = f"""
                    anti join {lake}._superseded as s
                        on s.partition = data._partition
                        and s.transaction_id = data._row.transaction_id"""
            con.execute(f"""
                create view {lake}.{table} as
                select * from {lake}._columns_{table}
                union all by name
                select data.* exclude (_partition, _row), unnest(data._row)
                from ({rows}) as data
                {taken_over}""")
    revenue = committed.get("revenue", Committed({}))
    wanted = (revenue.loads if partitions.get("revenue") is None else partitions["revenue"]) \
        if "revenue" in partitions else ()
    rows = []
    for part in sorted(wanted):
        keys = parse_partition(part)
        load_id, loaded_at = revenue.loads[part][:2]
        receipts = revenue.metadata(part).get("receipts")
        rows.append((int(keys["location_id"]), date.fromisoformat(keys["business_date"]),
                     load_id, loaded_at, None if receipts is None else int(receipts)))
    arrow_insert(con, f"{lake}.{LAKE_LOADS}", rows, LOADS_SCHEMA)


def drop_lake_views(con: duckdb.DuckDBPyConnection) -> None:
    """Detach the catalog ``lake`` (a built warehouse reads nothing outside its file)."""
    con.execute(f"detach database if exists {LAKE_SCHEMA}")
