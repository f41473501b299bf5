"""The lake as the build reads it: committed loads only, as views over their files.

The views live in an in-memory catalog named ``lake`` that the build attaches beside the
warehouse it writes, so a model's ``lake.<table>`` resolves to them while it is computed
and nothing of them is stored in the warehouse file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from pipeline.lake.store import data_file_name, parse_partition, recorded_files
from pipeline.warehouse.models import LAKE_AREAS, LAKE_LOADS, LAKE_SCHEMA

if TYPE_CHECKING:
    from pipeline.warehouse.lakefiles import LakeFiles

LOAD_COLUMNS = pa.schema([pa.field("load_id", pa.string()),
                          pa.field("loaded_at", pa.timestamp("us", tz="UTC"))])
"""What every lake view adds to its table's columns: the committed load the row is from."""
FILES_SCHEMA = pa.schema([("filename", pa.string()), ("partition", pa.string()),
                          ("load_id", pa.string()), ("loaded_at", pa.timestamp("us", "UTC"))])
LOADS_SCHEMA = pa.schema([("location_id", pa.int32()), ("business_date", pa.date32()),
                         ("load_id", pa.string()), ("loaded_at", pa.timestamp("us", "UTC")),
                         ("receipts", pa.int64())])
"""``lake.revenue_loads`` (``LAKE_LOADS``): one row per committed revenue partition."""
SUPERSEDED_SCHEMA = pa.schema([("partition", pa.string()), ("transaction_id", pa.string())])
KEYS_FILES_AT_ONCE = 4000
"""Receipt files whose keys a build reads in one statement. DuckDB's state for the files
it reads lies outside its memory limit: the keys of a chain's 73,000 files read at once
peaked at 1,430 MB RSS, 4,000 at a time at 885 MB in the same 33 s. (A partition's keys
then also lie in a few vectors of the table, which is what deleting them costs.)"""
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
    """The committed loads of one lake area: partition (its folder path) -> load."""

    loads: dict[str, tuple[str, object, tuple[str, ...], str]]
    """partition -> (load id, loaded at, tables, metadata as JSON)."""

    def metadata(self, partition: str) -> dict[str, str]:
        """The metadata its load recorded (``Lake.write``)."""
        return json.loads(self.loads[partition][3])

    def without(self, partitions: set[str]) -> Committed:
        """These loads but ``partitions``'."""
        return Committed({p: load for p, load in self.loads.items() if p not in partitions})

    def recorded_files(self, partition: str) -> dict[str, dict]:
        """What its load recorded of each table's file (``pipeline.lake.store.recorded_files``)."""
        return recorded_files(self.metadata(partition))

    def columns(self, partition: str, table: str) -> str | None:
        """What the columns of the partition's file of ``table`` are (``columns_digest``);
        None if its load did not record it."""
        return self.recorded_files(partition).get(table, {}).get("columns")

    def path(self, base: str, table: str, partition: str) -> str:
        """The committed file of ``table`` in ``partition``."""
        return f"{base}/{table}/{partition}/{data_file_name(self.loads[partition][0])}"

    def files(self, base: str, table: str, partitions=None) -> list[tuple[str, str]]:
        """(file, partition) of the table's committed parts, of ``partitions`` if given;
        ``base`` is where the lake is (``LakeFiles.base``)."""
        keys = self.loads if partitions is None else partitions
        return [(self.path(base, table, part), part)
                for part in sorted(keys) if table in self.loads[part][2]]


def committed_loads(con: duckdb.DuckDBPyConnection, files: LakeFiles,
                    known: str = "_records") -> dict[str, Committed]:
    """Every area's committed partitions, read from the commit records in one pass each
    (``known``: the table where a lake may keep those it read, ``LakeFiles.records``)."""
    return {area: Committed({part: (load_id, loaded_at, tables, metadata)
                             for part, load_id, loaded_at, tables, metadata in records})
            for area, records in files.records(con, LAKE_AREAS, known).items()}


def superseded_receipts(con: duckdb.DuckDBPyConnection, base: str, revenue: Committed,
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
    files = [(f, part) for f, part in revenue.files(base, "receipts")
             if part not in known]
    if files:
        arrow_insert(con, "receipt_files", [(f, part, *revenue.loads[part][:2])
                                            for f, part in files], FILES_SCHEMA)
        for start in range(0, len(files), KEYS_FILES_AT_ONCE):
            con.execute(f"""
                insert into {keys_table}
                select f.partition, f.load_id, r.location_id, r.business_date,
                       r.transaction_id, f.loaded_at
                from read_parquet({file_list([f for f, _ in
                                              files[start:start + KEYS_FILES_AT_ONCE]])},
                                  hive_partitioning = true, filename = true) as r
                inner join receipt_files as f on r.filename = f.filename""")
        con.execute("drop table receipt_files")
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


def create_lake_views(con: duckdb.DuckDBPyConnection, base: str,
                      committed: dict[str, Committed], superseded: dict[str, list[str]],
                      partitions: dict[str, set[str] | None]) -> None:
    """A view per lake table over the files of committed loads (``pipeline.lake.store``), in a
    new in-memory catalog ``lake``: of the areas in ``partitions``, their partitions
    named there (None: all); the other areas' tables are empty. Receipts another
    partition took over are left out, with their lines, payments and side dishes."""
    drop_lake_views(con)
    con.execute(f"attach ':memory:' as {LAKE_SCHEMA}")
    lake = f"{LAKE_SCHEMA}.main"
    arrow_insert(con, f"{lake}._files", [], FILES_SCHEMA)
    arrow_insert(con, f"{lake}._superseded",
                 [(part, t) for part, ids in superseded.items() for t in ids], SUPERSEDED_SCHEMA)
    for area, tables in LAKE_AREAS.items():
        for table, schema in tables.items():
            files = committed[area].files(base, table, partitions[area]) \
                if area in partitions else []
            empty = pa.schema([*schema, *LOAD_COLUMNS]).empty_table()
            if not files:
                arrow_insert(con, f"{lake}.{table}", [], empty.schema)
                continue
            # Files written before a column existed (extra_fields, say) answer it as null.
            arrow_insert(con, f"{lake}._columns_{table}", [], empty.schema)
            arrow_insert(con, f"{lake}._files",
                         [(f, part, *committed[area].loads[part][:2])
                          for f, part in files], FILES_SCHEMA)
            taken_over = ""
            if area == "revenue":  # a receipt's lines, payments, side dishes go with it
                taken_over = f"""
                    anti join {lake}._superseded as s
                        on s.partition = loads.partition
                        and s.transaction_id = data.transaction_id"""
            con.execute(f"""
                create view {lake}.{table} as
                select * from {lake}._columns_{table}
                union all by name
                select data.* exclude (filename), loads.load_id, loads.loaded_at
                from ({_read_files(committed[area], table, files)}) as data
                inner join {lake}._files as loads on data.filename = loads.filename
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


def _read_files(committed: Committed, table: str, files: list[tuple[str, str]]) -> str:
    """SQL reading ``files`` (with their names): those whose load recorded the same
    columns at once, as the first file has them; the others matching their columns by
    name (which opens every file to see its columns, each time a query is planned)."""
    alike: dict[str | None, list[str]] = {}
    for file, part in files:
        alike.setdefault(committed.columns(part, table), []).append(file)
    return " union all by name ".join(
        f"select * from read_parquet({file_list(found)}, hive_partitioning = true, "
        f"filename = true{', union_by_name = true' if columns is None else ''})"
        for columns, found in alike.items())


def drop_lake_views(con: duckdb.DuckDBPyConnection) -> None:
    """Detach the catalog ``lake`` (a built warehouse reads nothing outside its file)."""
    con.execute(f"detach database if exists {LAKE_SCHEMA}")
