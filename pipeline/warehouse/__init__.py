"""The DuckDB warehouse: the SQL models of ``dbt_like_sql/`` built from the lake into one
self-contained file. The models themselves are read and checked by the SQL runner
(``pipeline.sqlrunner``); this package gives it the lake and the config, and builds.

- ``lake_tables``: the lake's tables as the models' sources;
- ``project``: the shipped project read over them, once per process;
- ``config_sql``: what the config file gives the models (locations, accounts, the bank);
- ``lakeviews``: the lake's committed loads as the views a build reads;
- ``plan``: which groups of the partitioned models a build must compute (versions);
- ``integrity``: the lake's partitions checked against their commit records;
- ``compute``: the partitioned models' groups computed, a batch at a time, and checked;
- ``build``: the build itself, its checks, the switch to the new file;
- ``standby``: the two files taking turns, and their publication;
- ``resource``: the warehouse as the pipeline's steps use it;
- ``coverage``, ``freshness``, ``selection``: what the warehouse's users ask of it.
"""

from pipeline.areas.revenue.macros import macro_sql
from pipeline.core.project import MODELS_DIR
from pipeline.sqlrunner import STAGES, Model, ModelError, Project, build_order
from pipeline.warehouse.build import BlockedBuild, BuildResult, build_warehouse
from pipeline.warehouse.config_sql import config_macros, config_tables
from pipeline.warehouse.lake_tables import LAKE_AREA_OF, LAKE_AREAS, LAKE_TABLES
from pipeline.warehouse.project import discover_models, read_project, shipped
from pipeline.warehouse.resource import Warehouse
from pipeline.warehouse.shrink import LakeShrank, LakeWentBack

__all__ = ["LAKE_AREAS", "LAKE_AREA_OF", "LAKE_TABLES", "MODELS_DIR", "STAGES",
           "BlockedBuild", "BuildResult", "LakeShrank", "LakeWentBack", "Model", "ModelError",
           "Project", "Warehouse",
           "build_order", "build_warehouse", "config_macros", "config_tables",
           "discover_models", "macro_sql", "read_project", "shipped"]
