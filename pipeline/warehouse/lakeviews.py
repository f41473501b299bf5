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

from pipeline.areas.revenue.commits import PROVISIONAL
from pipeline.lake.store import parse_partition
from pipeline.warehouse.lake_tables import LAKE_AREAS, LAKE_LOADS, LAKE_SCHEMA

if TYPE_CHECKING:
    from pipeline.warehouse.lakefiles import LakeFiles

LOAD_COLUMNS = pa.schema([pa.field("load_id", pa.string()),
                          pa.field("loaded_at", pa.timestamp("us", tz="UTC"))])
"""What every lake view adds to its table's columns: the committed load the row is from."""
LOADS_SCHEMA = pa.schema([("location_id", pa.int32()), ("business_date", pa.date32()),
                         ("load_id", pa.string()), ("loaded_at", pa.timestamp("us", "UTC")),
                         ("receipts", pa.int64()), ("provisional", pa.bool_())])
"""``lake.revenue_loads`` (``LAKE_LOADS``): one row per committed revenue partition;
``provisional``: loaded before its business day was over (``RevenuePartition.provisional``)."""
SUPERSEDED_SCHEMA = pa.schema([("partition", pa.string()), ("transaction_id", pa.string())])
KEYS_FILES_AT_ONCE = 8
"""Revenue files (a date's each) whose receipt keys a build reads at once: what bounds the
memory of reading a long history's keys (8 of a 200-location chain's dates: 0.6 M keys)."""
KEYS_COLUMNS = ("partition varchar, load_id varchar, location_id bigint, business_date date, "
                "transaction_id varchar, loaded_at timestamptz")


def sql_path(path: Path | str) -> str:
    """A path as the content of a SQL string literal (its quotes doubled)."""
    return str(path).replace("'", "''")


def keys_predicate(con: duckdb.DuckDBPyConnection, keys: tuple[str, ...],
                   partitions: Iterable[str], name: str) -> str:
    """SQL true for the rows of ``partitions`` (``location_id=1001/business_date=...``), on
    the keys' own columns (the last a date): their dates' range, so that DuckDB skips the
    row groups of other dates, and their keys among the rows of the temporary table
    ``name``, which this creates (or replaces) with one row per partition. A semi-join
    against a table of them, not a term per partition OR'ed: with a chain's 200
    locations a batch's terms cost DuckDB some 30x the join for every row it reads
    (0.29 s against 0.01 s a count of 0.8 M rows, 2026-11-29)."""
    values = [parse_partition(p) for p in partitions]
    if not values:
        return "false"
    *heads, last = keys
    days = [date.fromisoformat(v[last]) for v in values]
    fields, columns = [], []
    for key in heads:
        column = [v[key] for v in values]
        number = all(c.isdigit() for c in column)
        fields.append(pa.field(key, pa.int64() if number else pa.string()))
        columns.append([int(c) for c in column] if number else column)
    fields.append(pa.field(last, pa.date32()))
    columns.append(days)
    rows = pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, fields,
                                                                             strict=True)],
                                schema=pa.schema(fields))
    con.register("_group_keys", rows)
    try:
        con.execute(f'create or replace temp table "{name}" as select * from _group_keys')
    finally:
        con.unregister("_group_keys")
    names = ", ".join(keys)
    return (f"({last} between date '{min(days)}' and date '{max(days)}' "
            f'and ({names}) in (select {names} from temp.main."{name}"))')


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
        if rows:
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


LAKE_ROWS_COLUMNS = ("area varchar, path varchar, partition varchar, load_id varchar, "
                     "loaded_at timestamptz, metadata varchar")
"""The state table (``lake_rows``) of what a build read of the lake: per file of an area's
pinned version, the partitions (rows) it holds with their loads."""
FILES_AT_ONCE = 256
"""Lake files whose rows' keys and loads a build reads in one statement."""


def committed_loads(con: duckdb.DuckDBPyConnection, files: LakeFiles,
                    table: str | None = None) -> dict[str, Committed]:
    """Every area's committed partitions at its newest version (pinned: the build reads
    exactly these).

    A data file is never changed once committed, so what a file holds is read once: the
    keys and loads of the files a build read are kept in ``table`` (the state file's
    ``lake_rows``), and the next build reads only the files its version added since
    (the log's add actions it did not know) and forgets those it removed. A night reads
    the files of its own dates, not the history's (None: every file is read)."""
    found = {}
    if table is not None:
        con.execute(f"create table if not exists {table} ({LAKE_ROWS_COLUMNS})")
    for area, snapshot in files.snapshots(LAKE_AREAS).items():
        if snapshot is None or not snapshot.files():
            found[area] = Committed({})
            if table is not None:
                con.execute(f"delete from {table} where area = ?", [area])
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
        source = table or "_lake_rows"
        if table is None:
            con.execute(f"create or replace temp table _lake_rows ({LAKE_ROWS_COLUMNS})")
            new = every
        else:
            arrow_insert(con, "_pinned_files", [(f,) for f in every],
                         pa.schema([("path", pa.string())]))
            con.execute(f"delete from {table} as t where area = ? and not exists ("
                        f"select 1 from _pinned_files as f where f.path = t.path)", [area])
            con.execute("drop table _pinned_files")
            known = {row[0] for row in con.execute(
                f"select distinct path from {table} where area = ?", [area]).fetchall()}
            new = [f for f in every if f not in known]
        for start in range(0, len(new), FILES_AT_ONCE):
            con.execute(f"""
                insert into {source}
                select '{area}', r.filename, {committed.partition_sql('r')}, r.load_id,
                       r.loaded_at, r.metadata
                from read_parquet({file_list(new[start:start + FILES_AT_ONCE])},
                                  hive_partitioning = true, union_by_name = true,
                                  filename = true,
                                  hive_types = {{'{layout.date_key}': {committed.date_type}}})
                    as r""")
        rows = con.execute(f"""
            select partition, load_id, loaded_at, metadata from {source} where area = ?
            qualify row_number() over (partition by partition order by load_id desc) = 1
            """, [area]).fetchall()
        if table is None:
            con.execute("drop table _lake_rows")
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
    if not missing:
        return
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


def superseded_receipts(con: duckdb.DuckDBPyConnection, files: LakeFiles,
                        revenue: Committed, state: str,
                        deleted: Callable[[duckdb.DuckDBPyConnection, int], None]
                        ) -> dict[str, list[str]]:
    """Receipts a newer load holds in another partition (the POS moved them to another
    day): partition -> their transaction ids. Staging keeps the newest version only.

    The build's state (the schema ``state``) keeps the key of every committed receipt
    (``receipt_keys``, with the load of each partition in ``receipt_key_loads``) and the
    receipts superseded (``superseded``). A build drops the keys of partitions whose load
    is no longer committed (telling ``deleted`` how many), reads the keys of the loads new
    since from the lake, and ranks again only the receipts (location, transaction) among
    the keys dropped or added: a night's work follows its loads, not the history.
    """
    keys_table, loads_table = f"{state}.receipt_keys", f"{state}.receipt_key_loads"
    superseded_table = f"{state}.superseded"
    anew = not table_exists(con, superseded_table) or not table_exists(con, loads_table)
    if anew:  # a new state (or one from before these tables): everything again
        for table in (keys_table, loads_table, superseded_table):
            con.execute(f"drop table if exists {table}")
    con.execute(f"create table if not exists {keys_table} ({KEYS_COLUMNS})")
    con.execute(f"create table if not exists {loads_table} "
                f"(partition varchar, load_id varchar)")
    con.execute(f"create table if not exists {superseded_table} "
                f"(partition varchar, location_id bigint, transaction_id varchar)")
    known = dict(con.execute(f"select partition, load_id from {loads_table}").fetchall())
    changed = sorted(p for p, load in known.items()
                     if p not in revenue.loads or revenue.loads[p][0] != load)
    new = sorted(p for p in revenue.loads if known.get(p) != revenue.loads[p][0])
    con.execute("create or replace temp table _touched "
                "(location_id bigint, transaction_id varchar)")
    where = keys_predicate(con, revenue.keys, changed, "_changed_groups")
    if changed:  # the keys of loads no longer committed
        con.execute(f"insert into _touched select distinct location_id, transaction_id "
                    f"from {keys_table} where {where}")
        deleted(con, con.execute(f"delete from {keys_table} where {where}").fetchone()[0])
        arrow_insert(con, "_changed", [(p,) for p in changed],
                     pa.schema([("partition", pa.string())]))
        con.execute(f"delete from {loads_table} where partition in "
                    f"(select partition from _changed)")
        con.execute("drop table _changed")
    dates: dict[str, list[str]] = {}
    for part in new:
        dates.setdefault(parse_partition(part)[revenue.date_key], []).append(part)
    chunk: list[str] = []
    for day in sorted(dates):  # a bounded number of files at once
        chunk += dates[day]
        if len(revenue.files(chunk)) >= KEYS_FILES_AT_ONCE or day == max(dates):
            rows = files.nested_leaves(revenue, chunk, {"receipts": ("transaction_id",)})
            if rows is not None:
                con.register("_new_rows", rows)
                try:
                    con.execute(f"""
                        insert into {keys_table}
                        select partition, load_id, location_id, business_date,
                               unnest(receipts).transaction_id, loaded_at
                        from _new_rows""")
                finally:
                    con.unregister("_new_rows")
            arrow_insert(con, loads_table, revenue.parts_rows(chunk), PARTS_SCHEMA)
            chunk = []
    if new and not anew:
        con.execute(f"insert into _touched select distinct location_id, transaction_id "
                    f"from {keys_table} where "
                    f"{keys_predicate(con, revenue.keys, new, '_new_groups')}")
    # Only receipts found more than once are ranked: those touched now (a hash join of
    # the keys with them), or, in a new state, all (a hash aggregate over every key, not
    # a sort of them all).
    if anew:
        twice = (f"select location_id, transaction_id from {keys_table} "
                 f"group by all having count(*) > 1")
    else:
        con.execute(f"delete from {superseded_table} as s where exists ("
                    f"select 1 from _touched as t where t.location_id = s.location_id "
                    f"and t.transaction_id = s.transaction_id)")
        twice = "select distinct location_id, transaction_id from _touched"
    if anew or changed or new:
        con.execute(f"""
            insert into {superseded_table}
            with twice as ({twice}), ranked as (
                select partition, location_id, transaction_id,
                       row_number() over (
                           partition by location_id, transaction_id
                           order by loaded_at desc, business_date desc) as n
                from {keys_table} semi join twice using (location_id, transaction_id)
            )
            select partition, location_id, transaction_id from ranked where n > 1""")
    con.execute("drop table _touched")
    return dict(con.execute(f"""
        select partition, list(transaction_id order by transaction_id)
        from {superseded_table} group by partition""").fetchall())


def table_exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether ``catalog.schema.name`` is a table."""
    catalog, schema, name = table.split(".")
    return bool(con.execute(
        "select count(*) from duckdb_tables() where database_name = ? and schema_name = ? "
        "and table_name = ?", [catalog, schema, name]).fetchone()[0])


def create_lake_views(con: duckdb.DuckDBPyConnection,
                      committed: dict[str, Committed], superseded: dict[str, list[str]],
                      partitions: dict[str, set[str] | None],
                      loads: Iterable[str] | None = ()) -> None:
    """A view per lake table over the rows of committed loads (``pipeline.lake.store``),
    their nested table unnested, in a new in-memory catalog ``lake``: of the areas in
    ``partitions``, their partitions named there (None: all); the other areas' tables
    are empty. Receipts another partition took over are left out, with their lines,
    payments and side dishes. ``lake.revenue_loads`` lists the revenue partitions
    ``loads`` (None: all)."""
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
        # the tables the area's files hold: a table added since an older lake was
        # written (the ledger's reports as closed, say) is in none of them yet
        held = set(next(iter(area_loads.loads.values()))[2]) if area_loads.loads else set()
        for table, schema in tables.items():
            empty = pa.schema([*schema, *LOAD_COLUMNS]).empty_table()
            # the table's columns and types, whatever the files hold
            arrow_insert(con, f"{lake}._columns_{table}", [], empty.schema)
            if not parts or table not in held:
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
    wanted = revenue.loads if loads is None else loads
    arrow_insert(con, "_loads", [(p, *revenue.loads[p][:2], revenue.loads[p][3])
                                 for p in sorted(wanted) if p in revenue.loads],
                 pa.schema([("partition", pa.string()), ("load_id", pa.string()),
                            ("loaded_at", pa.timestamp("us", "UTC")),
                            ("metadata", pa.string())]))
    arrow_insert(con, f"{lake}.{LAKE_LOADS}", [], LOADS_SCHEMA)
    con.execute(f"""
        insert into {lake}.{LAKE_LOADS}
        select cast(regexp_extract(partition, 'location_id=([^/]+)', 1) as integer),
               cast(regexp_extract(partition, 'business_date=([^/]+)', 1) as date),
               load_id, loaded_at,
               cast(json_extract_string(metadata, '$.receipts') as bigint),
               coalesce(json_extract_string(metadata, '$.{PROVISIONAL}') = 'true', false)
        from _loads""")
    con.execute("drop table _loads")


def drop_lake_views(con: duckdb.DuckDBPyConnection) -> None:
    """Detach the catalog ``lake`` (a built warehouse reads nothing outside its file)."""
    con.execute(f"detach database if exists {LAKE_SCHEMA}")
