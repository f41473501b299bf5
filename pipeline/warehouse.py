"""The DuckDB warehouse: SQL models found in ``dbt_like_sql/``, built into a new file.

The models are package data of ``dbt_like_sql``, so they travel with every install; a
build that finds none fails. Macros in ``dbt_like_sql/macros/`` (the spec's revenue
rules) are created first. A model is one ``.sql`` file; its name is the file name. A
model reads lake tables as ``lake.<table>`` and other models by name; dependencies are
parsed from the SQL with sqlglot, never listed by hand. A build writes a fresh file next
to the warehouse and renames it over the old one, so a reader holding the old file open
keeps a consistent copy and never sees half-built models. A file lock keeps builds one at a time.
"""

from __future__ import annotations

import fcntl
import importlib.resources
import os
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

from pipeline.checks import CheckOutcome, run_checks
from pipeline.drift import DRIFT_TABLES
from pipeline.extract.catalog import CATALOG_TABLES
from pipeline.extract.menu import MENU_TABLES
from pipeline.extract.schemas import REVENUE_TABLES
from pipeline.extract.vouchers import VOUCHER_TABLES
from pipeline.lake import LOAD_FILE, LOADS_DIR, Lake

MODELS_DIR = Path(str(importlib.resources.files("dbt_like_sql")))
STAGES = ("staging", "marts", "reports")
LAKE_SCHEMA = "lake"
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


@dataclass(frozen=True)
class Model:
    name: str
    stage: str
    path: Path
    sql: str
    model_deps: frozenset[str]
    lake_deps: frozenset[str]

    @property
    def grain(self) -> str:
        """The model's grain, from its first comment line."""
        first = self.sql.lstrip().splitlines()[0] if self.sql.strip() else ""
        return first.removeprefix("--").strip()


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
        elif table.name and table.name not in ctes and not table.db:
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
                                     frozenset(lake_tables))
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
    return found


def macro_sql(models_dir: Path = MODELS_DIR) -> list[str]:
    """The ``create macro`` statements of ``macros/``, in file name order."""
    return [path.read_text(encoding="utf-8")
            for path in sorted((models_dir / "macros").glob("*.sql"))]


def build_order(models: dict[str, Model]) -> list[str]:
    """Model names so that every model comes after the models it reads."""
    graph = {name: set(model.model_deps) for name, model in models.items()}
    return list(TopologicalSorter(graph).static_order())


LOAD_COLUMNS = pa.schema([pa.field("load_id", pa.string()),
                          pa.field("loaded_at", pa.timestamp("us", tz="UTC"))])
"""What every lake view adds to its table's columns: the committed load the row is from."""


def _sql_path(path: Path) -> str:
    return str(path.resolve()).replace("'", "''")


def _create_lake_views(con: duckdb.DuckDBPyConnection, lake_dir: Path) -> None:
    """A view per lake table over the files of committed loads only (``pipeline.lake``)."""
    con.execute(f"create schema {LAKE_SCHEMA}")
    for area, tables in LAKE_AREAS.items():
        loads = lake_dir / LOADS_DIR / area
        committed = next(loads.glob(f"**/{LOAD_FILE}"), None) is not None
        for table, schema in tables.items():
            if committed and next((lake_dir / table).glob("**/*.parquet"), None):
                con.execute(f"""
                    create view {LAKE_SCHEMA}.{table} as
                    select data.* exclude (filename), loads.load_id, loads.loaded_at
                    from read_parquet('{_sql_path(lake_dir / table)}/**/*.parquet',
                                      hive_partitioning = true, union_by_name = true,
                                      filename = true) as data
                    inner join read_parquet('{_sql_path(loads)}/**/{LOAD_FILE}',
                                            hive_partitioning = false) as loads
                        on regexp_extract(data.filename, 'part-([^/]+)[.]parquet$', 1)
                           = loads.load_id""")
            else:
                empty = pa.schema([*schema, *LOAD_COLUMNS]).empty_table()
                con.from_arrow(empty).create(f"{LAKE_SCHEMA}.{table}")


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
    order: list[str]
    checks: list[CheckOutcome] = field(default_factory=list)

    @property
    def failed_checks(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]


@dataclass(frozen=True)
class Warehouse:
    """The DuckDB file and the lake it is built from. The Dagster resource ``warehouse``."""

    path: Path
    lake: Lake

    def build(self, models: dict[str, Model] | None = None) -> BuildResult:
        """Build every model, run the data checks on the new file, then switch it in."""
        outcomes: list[CheckOutcome] = []
        result = build_warehouse(self.lake.root, self.path, models,
                                 on_built=lambda con: outcomes.extend(run_checks(con)))
        result.checks = outcomes
        return result


def build_warehouse(lake_dir: Path, warehouse_path: Path,
                    models: dict[str, Model] | None = None,
                    on_built=None) -> BuildResult:
    """Build every model from the lake into a new file, then switch it in atomically.

    ``on_built(con)`` runs on the new file before the switch (the data checks use it).
    """
    models = models or discover_models()
    order = build_order(models)
    warehouse_path = Path(warehouse_path)
    with _build_lock(warehouse_path):
        # Under the lock no other build runs: any half-built file is a killed build's.
        for stale in warehouse_path.parent.glob(f".{warehouse_path.name}.*.building*"):
            stale.unlink(missing_ok=True)
        Lake(Path(lake_dir)).adopt_uncommitted_layout(LAKE_AREAS)
        temp = warehouse_path.with_name(f".{warehouse_path.name}.{uuid.uuid4().hex}.building")
        try:
            counts: dict[str, int] = {}
            with duckdb.connect(str(temp)) as con:
                # Only named tables are read: never a Python variable of the same name.
                con.execute("set python_enable_replacements = false")
                for sql in macro_sql():
                    con.execute(sql)
                _create_lake_views(con, Path(lake_dir))
                for name in order:
                    try:
                        con.execute(f"create table main.{name} as {models[name].sql}")
                    except duckdb.Error as exc:
                        raise ModelError(f"model {name} ({models[name].path.name}): {exc}") \
                            from None
                    counts[name] = con.execute(f"select count(*) from main.{name}").fetchone()[0]
                con.execute(f"drop schema {LAKE_SCHEMA} cascade")
                if on_built:
                    on_built(con)
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
    return BuildResult(warehouse_path, counts, order)
