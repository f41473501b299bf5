"""Where every field of the spec's resources lands in the lake: ``Resource.wire.path`` ->
``table.column``, derived from the lake's schemas (each table names the spec objects its
rows come from, each column its wire path: ``schemas.lake_schema``). A test holds this map
to the spec's pydantic models, so a field cannot be dropped silently.
"""

from __future__ import annotations

from pipeline.extract.catalog import CATALOG_TABLES
from pipeline.extract.menu import MENU_TABLES
from pipeline.extract.schemas import REVENUE_TABLES, landing
from pipeline.extract.vouchers import VOUCHER_TABLES

SPEC_LANDING: dict[str, str] = landing(
    {**REVENUE_TABLES, **CATALOG_TABLES, **MENU_TABLES, **VOUCHER_TABLES})
"""Every field of the spec's resources that the pipeline reads, and its lake column."""
