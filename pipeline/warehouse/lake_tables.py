"""The lake as the models read it: each area's tables in the schema ``lake`` (the SQL
runner's sources, ``pipeline.sqlrunner.Sources``), and the partition keys a check's
failing rows are told by."""

from __future__ import annotations

import pyarrow as pa

from pipeline.areas import AREAS
from pipeline.sqlrunner import Sources
from pipeline.warehouse.config_sql import CONFIG_TABLES

LAKE_SCHEMA = "lake"
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
PARTITION_KEYS = ("location_id", "business_date")
"""The columns a lake partition is named by, as the models carry them."""

LAKE_SOURCES = Sources(LAKE_SCHEMA, LAKE_AREA_OF, CONFIG_TABLES, PARTITION_KEYS)
"""What the shipped models read that no model makes: the lake's tables and the config's
table macros (``config_sql``)."""
