"""The DuckDB warehouse: SQL models found in ``dbt_like_sql/``, built into a new file.

The models are package data of ``dbt_like_sql``, so they travel with every install; a
build that finds none fails. Macros in ``dbt_like_sql/macros/`` (the spec's revenue
rules) are created first. A model is one ``.sql`` file; its name is the file name. A
model reads lake tables as ``lake.<table>`` and other models by name; dependencies are
parsed from the SQL with sqlglot, never listed by hand.

A model is materialized as its header says (``-- materialized: ...``, as dbt's config):

- ``table`` (the default): rebuilt in full by every build (dimensions, small reports);
- ``partitioned``: its grain lies within one lake area's partitions (a location's business
  date), so a build computes it only for the months of partitions whose input changed and
  keeps the rest (``pipeline.parts``); the warehouse file holds a view over its parts;
- ``view``: computed when queried.

Every build writes a fresh (small) file next to the warehouse and renames it over the
old one, so a reader holding the old file open keeps a consistent copy and never sees
half-built models. A file lock keeps builds one at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.resources
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from pathlib import Path

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from pipeline.checks import CHECKS, CheckOutcome, DataCheck, run_check
from pipeline.docs import Dictionary, apply_comments, load_dictionary
from pipeline.drift import DRIFT_TABLES
from pipeline.extract.catalog import CATALOG_TABLES
from pipeline.extract.menu import MENU_TABLES
from pipeline.extract.schemas import REVENUE_TABLES
from pipeline.extract.vouchers import VOUCHER_TABLES
from pipeline.lake import LOAD_FILE, LOADS_DIR, Lake, data_file_name, new_load_id
from pipeline.parts import (
    FORMAT_VERSION,
    GROUP_KEY,
    STATE_SCHEMA,
    Grouping,
    Manifest,
    Part,
    arrow_insert,
    carry_replaced,
    digest,
    parts_dir,
    remove_unused_parts,
    sql_path,
    write_parts,
)
from pipeline.settings import DEFAULT_MEMORY_LIMIT, AccountingSettings

MODELS_DIR = Path(str(importlib.resources.files("dbt_like_sql")))
STAGES = ("staging", "marts", "reports")
LAKE_SCHEMA = "lake"
STAGING_SCHEMA = "staging"
LAKE_AREAS: dict[str, dict[str, pa.Schema]] = {
    "revenue": REVENUE_TABLES, "catalog": CATALOG_TABLES, "menu": MENU_TABLES,
    "vouchers": VOUCHER_TABLES, "drift": DRIFT_TABLES,
}
"""The lake's tables by the source area (and Dagster asset ``lake/<area>``) that writes them."""
LAKE_TABLES: dict[str, pa.Schema] = {t: s for tables in LAKE_AREAS.values()
                                     for t, s in tables.items()}
LAKE_AREA_OF: dict[str, str] = {t: area for area, tables in LAKE_AREAS.items() for t in tables}


class ModelError(Exception):
    """A model's SQL is wrong or refers to something that does not exist."""


class BlockedBuild(ModelError):
    """A blocking data check failed: the models are wrong, so the build was not published
    and the previous warehouse stays in place."""

    def __init__(self, failed: list[CheckOutcome]):
        self.failed = failed
        listed = "; ".join(f"{o.check.model}: {o.check.name} ({o.failing_rows} rows, e.g. "
                           f"{o.sample[:1]})" for o in failed)
        super().__init__(f"blocking check(s) failed, so this build was not published and "
                         f"the previous warehouse stays: {listed}")


MATERIALIZATIONS = ("table", "partitioned", "view")


@dataclass(frozen=True)
class Model:
    name: str
    stage: str
    path: Path
    sql: str
    model_deps: frozenset[str]
    lake_deps: frozenset[str]
    materialized: str = "table"
    area: str | None = None
    """The lake area whose partitions a partitioned model follows."""

    @property
    def schema(self) -> str:
        """Where the model lives in the warehouse: staging models in ``staging``, marts
        and reports in ``main`` (the default schema BI tools open)."""
        return STAGING_SCHEMA if self.stage == "staging" else "main"

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def grain(self) -> str:
        """The model's grain, from its first comment line."""
        first = self.sql.lstrip().splitlines()[0] if self.sql.strip() else ""
        return first.removeprefix("--").strip()


def _materialization(sql: str, name: str) -> str:
    """``-- materialized: <how>`` among the comment lines the model starts with."""
    for line in sql.lstrip().splitlines():
        if not line.startswith("--"):
            break
        key, _, value = line.removeprefix("--").partition(":")
        if key.strip() == "materialized":
            if value.strip() not in MATERIALIZATIONS:
                raise ModelError(f"model {name}: materialized must be one of "
                                 f"{', '.join(MATERIALIZATIONS)}, not {value.strip()!r}")
            return value.strip()
    return "table"


def _partition_areas(models: dict[str, Model]) -> dict[str, Model]:
    """Give each partitioned model its lake area; it may read only that area's tables and
    partitioned models of the same area (its rows of a partition come from that partition)."""
    done: dict[str, Model] = {}
    for name in build_order(models):
        model = models[name]
        if model.materialized != "partitioned":
            done[name] = model
            continue
        others = [d for d in model.model_deps if done[d].materialized != "partitioned"]
        areas = {LAKE_AREA_OF[t] for t in model.lake_deps} | {
            done[d].area for d in model.model_deps}
        if others or len(areas) != 1:
            raise ModelError(f"model {name} is partitioned, so it may read the lake tables "
                             "and partitioned models of one lake area only; it reads "
                             f"{sorted(model.lake_deps | model.model_deps)}")
        done[name] = Model(**{**model.__dict__, "area": areas.pop()})
    return done


def _references(sql: str, name: str) -> tuple[set[str], set[str]]:
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise ModelError(f"model {name}: cannot parse its SQL: {exc}") from None
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    models, lake_tables = set(), set()
    for table in tree.find_all(exp.Table):
        if table.db == LAKE_SCHEMA:
            lake_tables.add(table.name)
        elif table.name and table.name not in ctes and table.db in ("", "main", STAGING_SCHEMA):
            models.add(table.name)
    return models, lake_tables


def discover_models(models_dir: Path = MODELS_DIR) -> dict[str, Model]:
    """Every model below ``models_dir`` with the models and lake tables it reads."""
    found: dict[str, Model] = {}
    for stage in STAGES:
        for path in sorted((models_dir / stage).glob("*.sql")):
            sql = path.read_text(encoding="utf-8")
            models, lake_tables = _references(sql, path.stem)
            if path.stem in found:
                raise ModelError(f"model {path.stem} is defined twice")
            found[path.stem] = Model(path.stem, stage, path, sql, frozenset(models),
                                     frozenset(lake_tables), _materialization(sql, path.stem))
    if not found:
        raise ModelError(f"no SQL models found below {models_dir} (expected "
                         f"{', '.join(STAGES)} folders of .sql files): is the package "
                         "installed without its SQL files?")
    for model in found.values():
        unknown = model.model_deps - found.keys()
        if unknown:
            raise ModelError(f"model {model.name} reads {sorted(unknown)}, which no model defines")
        unknown_lake = model.lake_deps - LAKE_TABLES.keys()
        if unknown_lake:
            raise ModelError(f"model {model.name} reads lake tables {sorted(unknown_lake)}, "
                             f"which the pipeline does not write")
    return _partition_areas(found)


def model_dictionary(models: dict[str, Model]) -> Dictionary:
    """The data dictionary kept beside these models' SQL (``pipeline.docs``)."""
    root = next(iter(models.values())).path.parent.parent if models else MODELS_DIR
    return load_dictionary(root, STAGES)


def macro_sql(models_dir: Path = MODELS_DIR) -> list[str]:
    """The ``create macro`` statements of ``macros/``, in file name order."""
    return [path.read_text(encoding="utf-8")
            for path in sorted((models_dir / "macros").glob("*.sql"))]


def _sql_list(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values) or "null"


def config_macros(accounting: AccountingSettings | None = None,
                  default_timezone: str = "Europe/Vienna") -> tuple[str, ...]:
    """The macros the config file defines (``[accounting]``), created after ``macros/``:
    part of every partitioned model's version, so changing them recomputes the reports."""
    accounting = accounting or AccountingSettings()
    tz = accounting.ledger_timezone or default_timezone
    return (
        "-- a settlement of this payment group sells vouchers ([accounting] voucher_sale_groups)\n"
        "create or replace macro is_voucher_sale(payment_group_name) as\n"
        f"    payment_group_name in ({_sql_list(accounting.voucher_sale_groups)});",
        "-- a payment of this type redeems a voucher ([accounting] voucher_payment_types)\n"
        "create or replace macro is_voucher_payment(payment_type_name) as\n"
        f"    payment_type_name in ({_sql_list(accounting.voucher_payment_types)});",
        "-- the voucher ledger's business date of an instant ([accounting] ledger_timezone)\n"
        "create or replace macro ledger_date(instant) as\n"
        f"    cast(timezone({_sql_list([tz])}, instant) as date);",
    )


def qualify_staging(sql: str, models: dict[str, Model]) -> str:
    """``sql`` with every reference to a staging model written ``staging.<model>``, so a
    view reads the same tables whatever schema search path its reader has."""
    staging = [name for name, model in models.items() if model.schema == STAGING_SCHEMA]
    if not staging:
        return sql
    pattern = re.compile(r"(?<![.\w])(" + "|".join(map(re.escape, staging)) + r")\b")
    return pattern.sub(rf"{STAGING_SCHEMA}.\1", sql)


def build_order(models: dict[str, Model]) -> list[str]:
    """Model names so that every model comes after the models it reads."""
    graph = {name: set(model.model_deps) for name, model in models.items()}
    return list(TopologicalSorter(graph).static_order())


LOAD_COLUMNS = pa.schema([pa.field("load_id", pa.string()),
                          pa.field("loaded_at", pa.timestamp("us", tz="UTC"))])
"""What every lake view adds to its table's columns: the committed load the row is from."""


FILES_SCHEMA = pa.schema([("filename", pa.string()), ("partition", pa.string()),
                          ("load_id", pa.string()), ("loaded_at", pa.timestamp("us", "UTC"))])
SUPERSEDED_SCHEMA = pa.schema([("partition", pa.string()), ("transaction_id", pa.string())])


def _file_list(files: list[str]) -> str:
    return "[" + ", ".join(f"'{sql_path(f)}'" for f in files) + "]"


@dataclass(frozen=True)
class Committed:
    """The committed loads of one lake area: partition (its folder path) -> load."""

    loads: dict[str, tuple[str, object, tuple[str, ...]]]
    """partition -> (load id, loaded at, tables)."""

    def files(self, lake_dir: Path, table: str, partitions=None) -> list[tuple[str, str]]:
        """(file, partition) of the table's committed parts, of ``partitions`` if given."""
        keys = self.loads if partitions is None else partitions
        return [(str(lake_dir / table / part / data_file_name(self.loads[part][0])), part)
                for part in sorted(keys) if table in self.loads[part][2]]


def committed_loads(con: duckdb.DuckDBPyConnection, lake_dir: Path) -> dict[str, Committed]:
    """Every area's committed partitions, read from the commit records in one pass each."""
    result = {}
    for area in LAKE_AREAS:
        folder = lake_dir / LOADS_DIR / area
        loads = {}
        if next(folder.glob(f"**/{LOAD_FILE}"), None) is not None:
            rows = con.execute(f"""
                select filename, load_id, loaded_at, tables
                from read_parquet('{sql_path(folder)}/**/{LOAD_FILE}', filename = true,
                                  hive_partitioning = false)""").fetchall()
            root = str(folder.resolve()) + "/"
            for filename, load_id, loaded_at, tables in rows:
                partition = filename.removeprefix(root).removesuffix(f"/{LOAD_FILE}")
                loads[partition] = (load_id, loaded_at, tuple(tables))
        result[area] = Committed(loads)
    return result


RECEIPT_KEYS = f"{STATE_SCHEMA}.receipt_keys"
"""Every committed receipt's key and partition: what finds a receipt in two partitions."""


def superseded_receipts(con: duckdb.DuckDBPyConnection, lake_dir: Path, revenue: Committed,
                        previous: Path | None) -> dict[str, list[str]]:
    """Receipts a newer load holds in another partition (the POS moved them to another
    day): partition -> their transaction ids. Staging keeps the newest version only.

    The keys of every committed receipt are kept in the warehouse (``RECEIPT_KEYS``); a
    build reads only the partitions loaded since the ``previous`` warehouse from the lake.
    """
    con.execute(f"create schema if not exists {STATE_SCHEMA}")
    con.execute(f"create table {RECEIPT_KEYS} (partition varchar, load_id varchar, "
                "location_id bigint, business_date date, transaction_id varchar, "
                "loaded_at timestamptz)")
    current = [(part, load[0], load[1]) for part, load in revenue.loads.items()]
    arrow_insert(con, "committed_receipts", current, pa.schema(
        [("partition", pa.string()), ("load_id", pa.string()),
         ("loaded_at", pa.timestamp("us", "UTC"))]))
    known: set[str] = set()
    if previous is not None:
        try:
            con.execute(f"attach '{sql_path(previous)}' as previous (read_only)")
            con.execute(f"""
                insert into {RECEIPT_KEYS}
                select k.* from previous.{RECEIPT_KEYS} as k
                semi join committed_receipts as c
                    on k.partition = c.partition and k.load_id = c.load_id""")
            known = {row[0] for row in con.execute(
                f"select distinct partition from {RECEIPT_KEYS}").fetchall()}
        except duckdb.Error:  # no keys kept there (an older or unreadable warehouse)
            con.execute(f"delete from {RECEIPT_KEYS}")
            known = set()
        finally:
            with contextlib.suppress(duckdb.Error):
                con.execute("detach previous")
    files = [(f, part) for f, part in revenue.files(lake_dir, "receipts")
             if part not in known]
    if files:
        arrow_insert(con, "receipt_files", [(f, part, *revenue.loads[part][:2])
                                            for f, part in files], FILES_SCHEMA)
        con.execute(f"""
            insert into {RECEIPT_KEYS}
            select f.partition, f.load_id, r.location_id, r.business_date,
                   r.transaction_id, f.loaded_at
            from read_parquet({_file_list([f for f, _ in files])}, hive_partitioning = true,
                              filename = true) as r
            inner join receipt_files as f on r.filename = f.filename""")
        con.execute("drop table receipt_files")
    con.execute("drop table committed_receipts")
    return dict(con.execute(f"""
        with ranked as (
            select partition, transaction_id,
                   row_number() over (
                       partition by location_id, transaction_id
                       order by loaded_at desc, business_date desc) as n
            from {RECEIPT_KEYS}
        )
        select partition, list(transaction_id order by transaction_id)
        from ranked where n > 1 group by partition""").fetchall())


def _create_lake_views(con: duckdb.DuckDBPyConnection, lake_dir: Path,
                       committed: dict[str, Committed], superseded: dict[str, list[str]],
                       partitions: dict[str, set[str] | None]) -> None:
    """A view per lake table over the files of committed loads (``pipeline.lake``): of the
    areas in ``partitions``, their partitions named there (None: all); the other areas'
    tables are empty. Receipts another partition took over are left out."""
    con.execute(f"create schema {LAKE_SCHEMA}")
    arrow_insert(con, f"{LAKE_SCHEMA}._files", [], FILES_SCHEMA)
    arrow_insert(con, f"{LAKE_SCHEMA}._superseded",
                 [(part, t) for part, ids in superseded.items() for t in ids], SUPERSEDED_SCHEMA)
    for area, tables in LAKE_AREAS.items():
        for table, schema in tables.items():
            files = committed[area].files(lake_dir, table, partitions[area]) \
                if area in partitions else []
            empty = pa.schema([*schema, *LOAD_COLUMNS]).empty_table()
            if not files:
                con.from_arrow(empty).create(f"{LAKE_SCHEMA}.{table}")
                continue
            # Files written before a column existed (extra_fields, say) answer it as null.
            con.from_arrow(empty).create(f"{LAKE_SCHEMA}._columns_{table}")
            arrow_insert(con, f"{LAKE_SCHEMA}._files",
                         [(f, part, *committed[area].loads[part][:2])
                          for f, part in files], FILES_SCHEMA)
            taken_over = ""
            if table == "receipts":
                taken_over = f"""
                    anti join {LAKE_SCHEMA}._superseded as s
                        on s.partition = loads.partition
                        and s.transaction_id = data.transaction_id"""
            con.execute(f"""
                create view {LAKE_SCHEMA}.{table} as
                select * from {LAKE_SCHEMA}._columns_{table}
                union all by name
                select data.* exclude (filename), loads.load_id, loads.loaded_at
                from read_parquet({_file_list([f for f, _ in files])}, hive_partitioning = true,
                                  union_by_name = true, filename = true) as data
                inner join {LAKE_SCHEMA}._files as loads on data.filename = loads.filename
                {taken_over}""")


def chain_hashes(models: dict[str, Model], order: list[str],
                 extra_macros: tuple[str, ...] = ()) -> dict[str, str]:
    """A hash per partitioned model of its SQL, the macros and every model it reads."""
    macros = digest(*macro_sql(), *extra_macros)
    hashes: dict[str, str] = {}
    for name in order:
        model = models[name]
        if model.materialized == "partitioned":
            hashes[name] = digest(FORMAT_VERSION, macros, model.sql,
                                  *sorted(hashes[d] for d in model.model_deps))
    return hashes


@contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass
class BuildResult:
    path: Path
    row_counts: dict[str, int]
    """Rows per model (views are not counted)."""
    order: list[str]
    checks: list[CheckOutcome] = field(default_factory=list)
    rebuilt_partitions: dict[str, int] = field(default_factory=dict)
    """Per lake area: how many partitions the partitioned models were computed for."""

    @property
    def failed_checks(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]


@dataclass(frozen=True)
class Warehouse:
    """The DuckDB file and the lake it is built from. The Dagster resource ``warehouse``."""

    path: Path
    lake: Lake
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    macros: tuple[str, ...] = config_macros()
    """The macros of the config file (``config_macros``)."""

    def build(self, models: dict[str, Model] | None = None, full: bool = False) -> BuildResult:
        """Build the models (what changed, or everything with ``full``), run the data
        checks on the new file, then switch it in. A lake on object storage is mirrored
        first (what changed since the last build)."""
        self.lake.sync()
        return build_warehouse(self.lake.root, self.path, models, full=full,
                               memory_limit=self.memory_limit, macros=self.macros)



def _prepare(con: duckdb.DuckDBPyConnection, memory_limit: str,
             macros: tuple[str, ...]) -> None:
    """A connection's settings and macros for computing models."""
    # Only named tables are read: never a Python variable of the same name.
    con.execute("set python_enable_replacements = false")
    con.execute("set preserve_insertion_order = false")
    con.execute(f"set memory_limit = '{memory_limit}'")
    for sql in (*macro_sql(), *macros):
        con.execute(sql)
    con.execute(f"create schema {STAGING_SCHEMA}")
    # checks (and your own queries) may name staging models unqualified
    con.execute(f"set search_path = 'main,{STAGING_SCHEMA}'")


def _targets(models: dict[str, Model] | None, lake_dir: Path, warehouse_path: Path):
    """The models (found, if not given) in build order, the lake, the warehouse file and
    its parts' folder, as absolute paths."""
    models = models or discover_models()
    warehouse_path = Path(warehouse_path).absolute()
    return (models, build_order(models), Path(lake_dir).resolve(), warehouse_path,
            parts_dir(warehouse_path))


def build_warehouse(lake_dir: Path, warehouse_path: Path,
                    models: dict[str, Model] | None = None,
                    checks: tuple[DataCheck, ...] = CHECKS, full: bool = False,
                    memory_limit: str = DEFAULT_MEMORY_LIMIT,
                    macros: tuple[str, ...] = config_macros()) -> BuildResult:
    """Build the models from the lake into a new file, run the data checks on it, then
    switch it in atomically.

    Partitioned models are computed for the months of partitions whose input changed
    since the warehouse in place was built (every month with ``full``); everything else
    is rebuilt. The checks of partitioned models run on the months computed and carry
    the failures of the others over from the warehouse in place.
    """
    models, order, lake_dir, warehouse_path, root = _targets(models, lake_dir, warehouse_path)
    with _build_lock(warehouse_path):
        # Under the lock no other build runs: any half-built file (or the folder DuckDB
        # spilled to) is a killed build's.
        for stale in warehouse_path.parent.glob(f".{warehouse_path.name}.*.building*"):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
            stale.unlink(missing_ok=True)
        Lake(lake_dir).adopt_uncommitted_layout(LAKE_AREAS)
        shutil.rmtree(root / ".prebuilt", ignore_errors=True)  # an older version's
        previous = Manifest.read(warehouse_path)
        temp = warehouse_path.with_name(f".{warehouse_path.name}.{uuid.uuid4().hex}.building")
        try:
            with duckdb.connect(str(temp)) as con:
                _prepare(con, memory_limit, macros)
                manifest, stale, counts, outcomes = _build_models(
                    con, lake_dir, root, models, order, checks,
                    Manifest() if full else previous,
                    None if full or not warehouse_path.exists() else warehouse_path, macros)
                manifest.replaced = carry_replaced(previous, manifest.parts)
                manifest.write(con)
                apply_comments(con, models, model_dictionary(models))
                for check in checks:
                    if check not in outcomes:
                        outcomes[check] = run_check(con, check)
                blocked = [outcomes[c] for c in checks if c.blocking and not outcomes[c].passed]
                if blocked:  # nothing downstream may read wrong figures
                    raise BlockedBuild(blocked)
                con.execute("checkpoint")
            with open(temp, "rb") as fh:
                os.fsync(fh.fileno())
            # A WAL next to the warehouse belongs to the file being replaced (left by a
            # read-write session that died): DuckDB would refuse the new file with it.
            Path(f"{warehouse_path}.wal").unlink(missing_ok=True)
            os.replace(temp, warehouse_path)
        finally:
            temp.unlink(missing_ok=True)
            Path(f"{temp}.wal").unlink(missing_ok=True)
        kept = [p.file for p in manifest.parts.values() if p.file] + list(manifest.replaced)
        remove_unused_parts(
            root, {name: stale[model.area].keys() for name, model in models.items()
                   if model.materialized == "partitioned"},
            kept=kept, expired=set(previous.replaced) - set(manifest.replaced))
    return BuildResult(warehouse_path, counts, order, [outcomes[c] for c in checks],
                       {area: sum(map(len, groups.values())) for area, groups in stale.items()})


@dataclass
class _Plan:
    """What the parts of the partitioned models derive from, and their versions."""

    committed: dict[str, Committed]
    superseded: dict[str, list[str]]
    groupings: dict[str, Grouping]
    members: dict[str, dict[str, list[str]]]
    """area -> group -> its partitions."""
    versions: dict[str, dict[str, str]]
    """model -> group -> the version its part must have."""

    def stale(self, models: dict[str, Model], is_current) -> dict[str, dict[str, list[str]]]:
        """area -> the groups (with their partitions) of which some model's part is not
        ``is_current(model, group, version)``."""
        stale: dict[str, dict[str, list[str]]] = {}
        for name, versions in self.versions.items():
            area = models[name].area
            stale.setdefault(area, {}).update(
                (group, self.members[area][group]) for group, version in versions.items()
                if not is_current(name, group, version))
        return stale


def _plan(con: duckdb.DuckDBPyConnection, lake_dir: Path, models: dict[str, Model],
          order: list[str], macros: tuple[str, ...], previous_file: Path | None) -> _Plan:
    """The committed lake and the version of every part it calls for."""
    committed = committed_loads(con, lake_dir)
    superseded = superseded_receipts(con, lake_dir, committed["revenue"], previous_file)
    hashes = chain_hashes(models, order, macros)
    partitioned = [n for n in order if models[n].materialized == "partitioned"]
    groupings: dict[str, Grouping] = {}
    members: dict[str, dict[str, list[str]]] = {}
    for area in {models[n].area for n in partitioned}:
        loads = committed[area].loads
        groupings[area] = Grouping(tuple(k.split("=")[0] for k in next(iter(loads), "").split("/")))
        members[area] = {}
        for part in sorted(loads):
            members[area].setdefault(groupings[area].group(part), []).append(part)
    versions: dict[str, dict[str, str]] = {}
    for name in partitioned:
        area = models[name].area
        loads = committed[area].loads
        versions[name] = {group: digest(hashes[name], *(
            f"{part}:{loads[part][0]}:{','.join(superseded.get(part, []))}" for part in parts))
            for group, parts in members[area].items()}
    return _Plan(committed, superseded, groupings, members, versions)


def _create_model(con: duckdb.DuckDBPyConnection, models: dict[str, Model], name: str,
                  how: str = "table") -> None:
    try:
        con.execute(f"create {how} {models[name].qualified} as "
                    f"{qualify_staging(models[name].sql, models)}")
    except duckdb.Error as exc:
        raise ModelError(f"model {name} ({models[name].path.name}): {exc}") from None


def _compute_parts(con: duckdb.DuckDBPyConnection, lake_dir: Path, root: Path,
                   models: dict[str, Model], plan: _Plan, checked: dict[DataCheck, str],
                   groups: dict[str, dict[str, list[str]]], build_id: str):
    """The partitioned models' parts of ``groups`` (area -> group -> partitions), a batch
    of groups at a time, and the partitioned checks there. Returns the parts, per check
    its failing rows per group and a sample, and what each model is in ``con`` now (the
    last batch's views, or empty tables: the models' columns)."""
    partitioned = list(plan.versions)
    parts: list[Part] = []
    found: dict[DataCheck, tuple[dict[str, int], list]] = {c: ({}, []) for c in checked}
    batches = _batches(groups)
    kinds: dict[str, str] = {}  # partitioned model -> what it is now: table or view
    for n, batch in enumerate(batches, 1):
        _create_lake_views(con, lake_dir, plan.committed, plan.superseded, partitions={
            area: {part for parts in batch.get(area, {}).values() for part in parts}
            for area in plan.members})
        for name in partitioned:
            area = models[name].area
            if not batch.get(area):
                _create_model(con, models, name)  # an empty table: the model's columns
                kinds[name] = "table"
                continue
            # Computed once, straight into its parts; the models and checks after it
            # read them back (no copy in the warehouse file to write and drop again).
            _create_model(con, models, name, "view")
            try:
                written = write_parts(con, models[name].qualified, name, plan.groupings[area],
                                      {g: plan.versions[name][g] for g in batch[area]}, root,
                                      build_id)
            except ValueError as exc:
                raise ModelError(str(exc)) from None
            parts += written
            kinds[name] = _read_parts(con, models[name].qualified,
                                      [p.file for p in written if p.file], "view")
        for check, area in checked.items():
            if batch.get(area):
                failures, sample = found[check]
                failures.update(_failing_groups(con, check, area, plan.groupings[area]))
                if failures and not sample:
                    sample += con.execute(f"select * from ({check.sql}) limit 5").fetchall()
        if n < len(batches):  # the last batch's (empty) tables give models without parts
            for name in partitioned:
                con.execute(f"drop {kinds[name]} {models[name].qualified}")
            con.execute(f"drop schema {LAKE_SCHEMA} cascade")
    return parts, found, kinds


def _build_models(con: duckdb.DuckDBPyConnection, lake_dir: Path, root: Path,
                  models: dict[str, Model], order: list[str], checks: tuple[DataCheck, ...],
                  previous: Manifest, previous_file: Path | None, macros: tuple[str, ...]):
    """Every model into ``con``: the partitioned ones first, for the groups of partitions
    whose version changed, and their checks there; then views over their parts, then the
    tables and views. Returns the manifest, the groups computed per area with their
    partitions, the row counts and the outcomes of the partitioned checks."""
    plan = _plan(con, lake_dir, models, order, macros, previous_file)
    stale = plan.stale(models, previous.current)
    manifest = Manifest({key: part for key, part in previous.parts.items()
                         if key[0] in plan.versions and key[1] in plan.versions[key[0]]})
    checked = partitioned_checks(models, checks)
    parts, found, kinds = _compute_parts(con, lake_dir, root, models, plan, checked, stale,
                                         new_load_id())
    manifest.parts.update(((part.model, part.group), part) for part in parts)
    outcomes = {}
    for check, area in checked.items():
        new, sample = found[check]
        carried = {group: n for (key, group), n in previous.check_failures.items()
                   if key == check_key(check) and group in plan.members[area]
                   and group not in stale[area]}
        failures = carried | new
        manifest.check_failures.update(((check_key(check), group), n)
                                       for group, n in failures.items())
        outcomes[check] = CheckOutcome(check, sum(failures.values()), sample)
    counts: dict[str, int] = {}
    for name in plan.versions:  # the model is the view over all its parts
        counts[name] = manifest.rows(name)
        # One schema: a part's version changes with its model's SQL, so a changed model
        # has every part written again.
        _read_parts(con, models[name].qualified, manifest.files(name), kinds[name])
    con.execute(f"drop schema {LAKE_SCHEMA} cascade")
    _create_lake_views(con, lake_dir, plan.committed, plan.superseded, partitions={
        LAKE_AREA_OF[table]: None for model in models.values()
        if model.materialized != "partitioned" for table in model.lake_deps})
    for name in order:
        model = models[name]
        if model.materialized == "table":
            _create_model(con, models, name)
            counts[name] = con.execute(
                f"select count(*) from {model.qualified}").fetchone()[0]
        elif model.materialized == "view":  # counted when queried, not here
            _create_model(con, models, name, "view")
    con.execute(f"drop schema {LAKE_SCHEMA} cascade")
    return manifest, stale, counts, outcomes


def _read_parts(con: duckdb.DuckDBPyConnection, qualified: str, files: list[str],
                kind: str) -> str:
    """Make ``qualified`` (now a ``kind``, table or view) a view over the parts ``files``;
    without files, an empty table of its columns (a model without rows). Returns what
    it is then."""
    if not files:
        if kind == "view":
            con.execute(f"create table {qualified}__empty as select * from {qualified} limit 0")
            con.execute(f"drop view {qualified}")
            con.execute(f"alter table {qualified}__empty rename to {qualified.split('.')[1]}")
        return "table"
    con.execute(f"drop {kind} {qualified}")
    con.execute(f"create view {qualified} as select * exclude ({GROUP_KEY}) "
                f"from read_parquet({_file_list(files)})")
    return "view"


BATCH_GROUPS = 24
"""Groups (a location's month each) a build computes at once: what bounds its memory and
the Parquet files DuckDB holds open, however long the history or large the chain."""


def _batches(stale: dict[str, dict[str, list[str]]]) -> list[dict[str, dict[str, list[str]]]]:
    """The groups to compute, ``BATCH_GROUPS`` at a time (at least one batch, perhaps
    empty: it gives the models their schemas)."""
    pairs = [(area, group) for area, groups in stale.items() for group in sorted(groups)]
    batches = []
    for start in range(0, len(pairs), BATCH_GROUPS):
        batch: dict[str, dict[str, list[str]]] = {}
        for area, group in pairs[start:start + BATCH_GROUPS]:
            batch.setdefault(area, {})[group] = stale[area][group]
        batches.append(batch)
    return batches or [{}]


def _failing_groups(con: duckdb.DuckDBPyConnection, check: DataCheck, area: str,
                    grouping: Grouping) -> dict[str, int]:
    """Rows breaking a partitioned check, per group, in the groups computed now."""
    try:
        return dict(con.execute(f"select {grouping.group_sql()}, count(*) "
                                f"from ({check.sql}) group by all").fetchall())
    except duckdb.Error as exc:
        raise ModelError(f"check {check.name} of {check.model} runs on the partitions of "
                         f"lake area {area}, so it must return their keys "
                         f"{list(grouping.keys)}: {exc}") from None


def check_key(check: DataCheck) -> str:
    return f"{check.model}:{check.name}"


def partitioned_checks(models: dict[str, Model],
                       checks: tuple[DataCheck, ...]) -> dict[DataCheck, str]:
    """The checks that read partitioned models of one lake area only, with the area: they
    run on the partitions a build computes."""
    found = {}
    for check in checks:
        reads, lake_tables = _references(check.sql, check.name)
        areas = {models[m].area for m in reads if m in models}
        if reads and not lake_tables and reads <= models.keys() and len(areas) == 1 \
                and None not in areas:
            found[check] = areas.pop()
    return found
