"""The DuckDB warehouse: the SQL models of ``dbt_like_sql/`` built from the lake into one
self-contained file.

- ``project``: the SQL project a build is given, read once (models, dictionary, checks);
- ``models``: the models found, parsed and ordered; the macros;
- ``lakeviews``: the lake's committed loads as the views a build reads;
- ``plan``: which groups of the partitioned models a build must compute (versions);
- ``integrity``: the lake's partitions checked against their commit records;
- ``compute``: the partitioned models' groups computed, a batch at a time, and checked;
- ``build``: the build itself, its checks, the switch to the new file;
- ``standby``: the two files taking turns, and their publication;
- ``resource``: the warehouse as the pipeline's steps use it.
"""

from pipeline.areas.revenue.macros import macro_sql
from pipeline.warehouse.build import BlockedBuild, BuildResult, build_warehouse
from pipeline.warehouse.config_sql import config_macros, config_tables
from pipeline.warehouse.models import (
    LAKE_AREA_OF,
    LAKE_AREAS,
    LAKE_TABLES,
    MODELS_DIR,
    STAGES,
    Model,
    ModelError,
    build_order,
    discover_models,
)
from pipeline.warehouse.project import Project, shipped
from pipeline.warehouse.resource import Warehouse
from pipeline.warehouse.shrink import LakeShrank, LakeWentBack

__all__ = ["LAKE_AREAS", "LAKE_AREA_OF", "LAKE_TABLES", "MODELS_DIR", "STAGES",
           "BlockedBuild", "BuildResult", "LakeShrank", "LakeWentBack", "Model", "ModelError",
           "Warehouse",
           "build_order", "build_warehouse", "config_macros", "config_tables",
           "discover_models", "macro_sql", "Project", "shipped"]
