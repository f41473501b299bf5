"""The SQL models of ``dbt_like_sql/``: found, parsed and put in build order.

The models are package data of ``dbt_like_sql``, so they travel with every install; a
build that finds none fails. Macros in ``dbt_like_sql/macros/`` (the spec's revenue
rules) are created first. A model is one ``.sql`` file; its name is the file name. A
model reads lake tables as ``lake.<table>`` and other models by name; dependencies are
parsed from the SQL with sqlglot, never listed by hand.

A model is materialized as its ``config`` in its YAML file (beside its SQL) says
(``materialized``, as dbt's; default ``table``):

- ``table`` (the default): rebuilt in full by every build (dimensions, small reports);
- ``partitioned``: its grain lies within one lake area's partitions (a location's business
  date), so a build computes it only for the partitions whose input changed and
  keeps the rest (``pipeline.warehouse.plan``);
- ``view``: computed when queried.

Staging models are computed by each build and never stored (dbt's convention has them as
views; here the file must answer without the lake, so a view could not outlive the
build): they live in the build's in-memory catalog while the marts and reports that
read them are computed, and the marts are the stored copy (``Model.stored``). A staging
model's ``materialized`` still says how it is computed: ``partitioned`` for the groups a
build computes, ``table`` in full.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from graphlib import TopologicalSorter
from pathlib import Path

import pyarrow as pa
import sqlglot
from sqlglot import exp

from pipeline.areas import AREAS
from pipeline.core.project import MODELS_DIR, STAGES
from pipeline.warehouse.config_sql import CONFIG_TABLES
from pipeline.warehouse.dictionary import Dictionary, load_dictionary
from pipeline.warehouse.parse_cache import remembered

LAKE_SCHEMA = "lake"
STAGING_SCHEMA = "staging"
LAKE_AREAS: dict[str, dict[str, pa.Schema]] = {a.name: dict(a.tables) for a in AREAS}
"""The lake's tables by the area that writes them (``pipeline.areas``)."""
LAKE_TABLES: dict[str, pa.Schema] = {t: s for tables in LAKE_AREAS.values()
                                     for t, s in tables.items()}
LAKE_LOADS = "revenue_loads"
"""The lake catalog's view of the revenue area's commits, not a table of files: one row per
committed partition (``location_id``, ``business_date``, ``load_id``, ``loaded_at``,
``receipts``), days without receipts too (``pipeline.warehouse.lakeviews``)."""
LAKE_AREA_OF: dict[str, str] = {t: area for area, tables in LAKE_AREAS.items()
                                for t in tables} | {LAKE_LOADS: "revenue"}


class ModelError(Exception):
    """A model's SQL is wrong or refers to something that does not exist."""


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
    canonical: str = ""
    """The SQL as parsed (``canonical_sql``): what a part's version hashes."""
    grain: tuple[str, ...] = ()
    """The columns one row is unique by (``config.meta.grain`` in its YAML)."""
    rows: str = ""
    """Which rows it has, in words (``config.meta.rows``)."""
    owner: str | None = None
    """Who answers for it (``config.meta.owner``): a Dagster owner."""

    @property
    def schema(self) -> str:
        """Where the model lives in the warehouse: staging models in ``staging``, marts
        and reports in ``main`` (the default schema BI tools open)."""
        return STAGING_SCHEMA if self.stage == "staging" else "main"

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def stored(self) -> bool:
        """Whether the warehouse file holds the model: staging models are computed by the
        build that reads them and not stored; marts and reports are."""
        return self.stage != "staging"

    @property
    def built_as(self) -> str:
        """How a build makes it, as its log line says: the materialization, and ``not
        stored`` for a model the file does not hold."""
        return self.materialized if self.stored else f"{self.materialized}, not stored"



def _materialization(dictionary: Dictionary, name: str) -> str:
    """``config.materialized`` of the model's YAML entry (default ``table``)."""
    doc = dictionary.models.get(name)
    how = doc.materialized if doc else "table"
    if how not in MATERIALIZATIONS:
        raise ModelError(f"model {name}: materialized must be one of "
                         f"{', '.join(MATERIALIZATIONS)}, not {how!r}")
    return how


def _partition_areas(models: dict[str, Model]) -> dict[str, Model]:
    """Give each partitioned model its lake area; it may read only that area's tables and
    partitioned models of the same area (its rows of a partition come from that partition)."""
    done: dict[str, Model] = {}
    for name in build_order(models):
        model = models[name]
        if model.materialized != "partitioned":
            done[name] = model
            continue
        read = [t for t in CONFIG_TABLES if re.search(rf"\b{t}\s*\(", model.sql)]
        if read:
            raise ModelError(f"model {name} is partitioned, so it may not read {read[0]}() "
                             "(not part of its version: a config change would not recompute "
                             "it); make it materialized: table")
        others = [d for d in model.model_deps if done[d].materialized != "partitioned"]
        areas = {LAKE_AREA_OF[t] for t in model.lake_deps} | {
            done[d].area for d in model.model_deps}
        if others or len(areas) != 1:
            raise ModelError(f"model {name} is partitioned, so it may read the lake tables "
                             "and partitioned models of one lake area only; it reads "
                             f"{sorted(model.lake_deps | model.model_deps)}")
        done[name] = Model(**{**model.__dict__, "area": areas.pop()})
    return done


def _parse(sql: str, name: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(sql, dialect="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise ModelError(f"model {name}: cannot parse its SQL: {exc}") from None


def canonical_sql(sql: str) -> str:
    """``sql`` as sqlglot parses it, written back without comments and layout: editing a
    comment or the indentation of a model does not change what its versions hash."""
    return ";\n".join(tree.sql(dialect="duckdb", comments=False)
                      for tree in sqlglot.parse(sql, dialect="duckdb") if tree is not None)


@functools.lru_cache(maxsize=1024)
def references(sql: str, name: str) -> tuple[frozenset[str], frozenset[str]]:
    """The models and the lake tables ``sql`` reads (a check's SQL is parsed once per
    process: the build and the report ask for it more than once)."""
    models, lake_tables = _references(_parse(sql, name))
    return frozenset(models), frozenset(lake_tables)


@functools.lru_cache(maxsize=1024)
def _analysed(sql: str, name: str) -> tuple[frozenset[str], frozenset[str], str]:
    """A model's SQL parsed once per process (a command, a test run, the code location
    discover the models more than once), and once for all processes while its text, sqlglot
    and this module stay the same (``parse_cache``): what it reads, and its canonical
    text."""
    found = remembered(("model", name, sql), lambda: _analyse(sql, name), _is_analysis,
                       __file__)
    return frozenset(found["models"]), frozenset(found["lake"]), found["canonical"]


def _analyse(sql: str, name: str) -> dict:
    tree = _parse(sql, name)
    models, lake_tables = _references(tree)
    return {"models": sorted(models), "lake": sorted(lake_tables),
            "canonical": tree.sql(dialect="duckdb", comments=False)}


def _is_analysis(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("canonical"), str) and all(
        isinstance(value.get(k), list) and all(isinstance(v, str) for v in value[k])
        for k in ("models", "lake"))


def _references(tree: exp.Expression) -> tuple[set[str], set[str]]:
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    models, lake_tables = set(), set()
    for table in tree.find_all(exp.Table):
        if table.db == LAKE_SCHEMA:
            lake_tables.add(table.name)
        elif table.name and table.name not in ctes and table.db in ("", "main", STAGING_SCHEMA):
            models.add(table.name)
    return models, lake_tables


def discover_models(models_dir: Path = MODELS_DIR,
                    dictionary: Dictionary | None = None) -> dict[str, Model]:
    """Every model below ``models_dir`` with the models and lake tables it reads;
    ``dictionary``: the folder's, if it was read already."""
    found: dict[str, Model] = {}
    dictionary = dictionary or load_dictionary(models_dir, STAGES)
    for stage in STAGES:
        for path in sorted((models_dir / stage).glob("*.sql")):
            sql = path.read_text(encoding="utf-8")
            models, lake_tables, canonical = _analysed(sql, path.stem)
            if path.stem in found:
                raise ModelError(f"model {path.stem} is defined twice")
            doc = dictionary.models.get(path.stem)
            found[path.stem] = Model(
                path.stem, stage, path, sql, frozenset(models), frozenset(lake_tables),
                _materialization(dictionary, path.stem),
                canonical=canonical,
                grain=doc.grain if doc else (), rows=doc.rows if doc else "",
                owner=doc.owner if doc else None)
    if not found:
        raise ModelError(f"no SQL models found below {models_dir} (expected "
                         f"{', '.join(STAGES)} folders of .sql files): is the package "
                         "installed without its SQL files?")
    for model in found.values():
        unknown = model.model_deps - found.keys()
        if unknown:
            raise ModelError(f"model {model.name} reads {sorted(unknown)}, which no model defines")
        unknown_lake = model.lake_deps - LAKE_AREA_OF.keys()
        if unknown_lake:
            raise ModelError(f"model {model.name} reads lake tables {sorted(unknown_lake)}, "
                             f"which the pipeline does not write")
    return _partition_areas(found)


@dataclass(frozen=True)
class LakeColumns:
    """What a staging model calls each column of the lake table it reads."""

    table: str
    model: str
    columns: dict[str, str]
    """lake column -> staging column (the same name where it is not renamed)."""

    @property
    def renamed(self) -> dict[str, str]:
        return {lake: ours for lake, ours in self.columns.items() if lake != ours}


def lake_columns(models: dict[str, Model]) -> list[LakeColumns]:
    """Per lake table, its columns as its staging model names them: each projection of the
    select that reads the table's ``source`` CTE, over one lake column (or named as one
    of its columns), is that column renamed, cast or tidied. A test holds the map to
    every column of every lake table."""
    found = []
    for model in sorted(models.values(), key=lambda m: m.name):
        if model.stage != "staging" or len(model.lake_deps) != 1:
            continue
        (table,) = model.lake_deps
        tree = _parse(model.sql, model.name)
        columns: dict[str, str] = {}
        for select in tree.find_all(exp.Select):
            source = select.args.get("from_") or select.args.get("from")  # sqlglot 26-30
            if not source or not isinstance(source.this, exp.Table) \
                    or source.this.name != "source":
                continue
            for projection in select.expressions:
                used = {c.name for c in projection.find_all(exp.Column)}
                name = projection.alias_or_name
                if len(used) == 1 and name:
                    columns.setdefault(used.pop(), name)
                elif name in used:  # coalesce(nullif(external_name, ''), name) ...
                    columns.setdefault(name, name)
        if columns:
            found.append(LakeColumns(table, model.name, columns))
    return found


def only_in_build(sql: str, name: str, models: dict[str, Model]) -> bool:
    """Whether ``sql`` (a check's) reads a model the file does not store: only a build,
    which computes it, can run it."""
    return any(not models[m].stored for m in references(sql, name)[0] if m in models)


def qualify_staging(sql: str, models: dict[str, Model], scratch: str | None = None) -> str:
    """``sql`` with every reference to a staging model written ``staging.<model>``, so a
    view reads the same tables whatever schema search path its reader has; with
    ``scratch``, ``<scratch>.staging.<model>``: the catalog a build computes them in
    (``Model.stored``), whichever catalog is in use."""
    staging = [name for name, model in models.items() if model.schema == STAGING_SCHEMA]
    if not staging:
        return sql
    pattern = re.compile(r"(?<![.\w])(" + "|".join(map(re.escape, staging)) + r")\b")
    return pattern.sub(rf"{scratch + '.' if scratch else ''}{STAGING_SCHEMA}.\1", sql)


def build_order(models: dict[str, Model]) -> list[str]:
    """Model names so that every model comes after the models it reads."""
    graph = {name: set(model.model_deps) for name, model in models.items()}
    return list(TopologicalSorter(graph).static_order())
