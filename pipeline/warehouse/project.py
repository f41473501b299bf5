"""The SQL project shipped with the package (``dbt_like_sql``) as the SQL runner
(``pipeline.sqlrunner``) reads it: its sources are the lake's tables
(``lake_tables.LAKE_SOURCES``), its macros the revenue rule's and the config's. Nothing is
read at import; the shipped project on first use.

What parsing the models found is kept between processes in the user's cache folder
(``platformdirs``: ``~/.cache/pos-etl/parsed`` on Linux), or in
``$POS_ETL_CACHE_DIR/parsed``; ``POS_ETL_CACHE_DIR=`` (empty) keeps nothing
(``pipeline.sqlrunner.parse_cache``).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import duckdb
import platformdirs

from pipeline.areas.revenue.macros import macro_sql
from pipeline.core.project import MODELS_DIR
from pipeline.sqlrunner import Model, Project, unit
from pipeline.sqlrunner.dictionary import Dictionary
from pipeline.sqlrunner.models import discover_models as discover
from pipeline.warehouse.config_sql import config_macros, config_tables
from pipeline.warehouse.lake_tables import LAKE_SOURCES
from pipeline.warehouse.lakeviews import create_lake_views

CACHE_DIR_ENV = "POS_ETL_CACHE_DIR"
"""The folder the parse cache lives below (its ``parsed`` folder); empty: no cache."""


def parse_cache_dir() -> Path | None:
    """Where what parsing found is kept, or None when the cache is off."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured == "":
        return None
    return Path(configured or platformdirs.user_cache_dir("pos-etl")) / "parsed"


def read_project(root: Path = MODELS_DIR) -> Project:
    """The project of the folder ``root`` (its ``staging``, ``marts``, ``reports``) over
    the lake."""
    return Project.read(root, LAKE_SOURCES, parse_cache_dir())


@functools.cache
def shipped() -> Project:
    """The project installed with the package, read once per process."""
    return read_project(MODELS_DIR)


def discover_models(root: Path = MODELS_DIR, dictionary: Dictionary | None = None
                    ) -> dict[str, Model]:
    """The models of the folder ``root`` over the lake (``sqlrunner.models``)."""
    return discover(root, LAKE_SOURCES, dictionary, parse_cache_dir())


def prepare_empty(con: duckdb.DuckDBPyConnection) -> None:
    """The revenue rule's macros, a default config's and the lake's tables, empty: what
    the models read, with its columns and types and no rows."""
    for sql in (*macro_sql(), *config_macros(), *config_tables()):
        con.execute(sql)
    create_lake_views(con, {}, {}, partitions={})


def empty_warehouse(models: dict[str, Model]) -> duckdb.DuckDBPyConnection:
    """The models as views over an empty lake (``sqlrunner.unit.model_views``): what the
    models' unit tests and the data dictionary run on."""
    return unit.model_views(models, prepare_empty)
