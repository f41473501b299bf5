"""The catalog area: products, categories and spots of every location, today (spec 4.1)."""

from pipeline.areas.base import Kind, LakeArea
from pipeline.areas.catalog.extract import CATALOG_TABLES, extract_catalog_snapshot
from pipeline.sources.pos import SOURCE as POS

AREA = LakeArea(
    "catalog", Kind.SNAPSHOT, 1, CATALOG_TABLES, ("location_id", "snapshot_date"),
    "Products, categories and spots of every location, today.",
    source=POS, extract=extract_catalog_snapshot, master_data=True, from_the_wire=True)
