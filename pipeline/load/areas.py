"""The lake's areas, declared once: what writes them, their tables, their partition keys.

An area is what one step of a load writes together: a location's revenue of a business
date, a location's catalog or menu of a day, the voucher ledger of a day, and what other
steps commit (the drift check's findings, closed periods, exported files). Everything that
names the areas derives from ``AREAS``: the snapshot assets and the load's selection
(``pipeline.orchestration``), ``--location`` and ``--no-catalog``, the load's summary, the
warehouse's lake views (``pipeline.warehouse.models.LAKE_AREAS``) and where every field of
the spec lands (``SPEC_LANDING``). A new POS area is its spec model, its extractor (tables
and a ``load`` function), an entry here, its staging model, the sandbox's endpoint and a
test (docs/architecture.md walks through one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from pipeline.core.settings import Settings
from pipeline.extract.catalog import CATALOG_TABLES, extract_catalog_snapshot
from pipeline.extract.menu import MENU_TABLES, extract_menu_snapshot
from pipeline.extract.schemas import REVENUE_TABLES, landing
from pipeline.extract.snapshots import Snapshot
from pipeline.extract.vouchers import VOUCHER_TABLES, extract_voucher_snapshot
from pipeline.lake.tables import EXPORT_TABLES, LEDGER_TABLES
from pipeline.load.drift import DRIFT_TABLES


class Kind(Enum):
    """How an area is written."""

    REVENUE = "revenue"
    """Per location and business date, a range of dates per load (``lake/revenue``)."""
    SNAPSHOT = "snapshot"
    """Today's state of the POS, per location or for the tenant, once per load."""
    RECORD = "record"
    """Committed by another step: the drift check, closing a period, an export."""


@dataclass(frozen=True)
class LakeArea:
    name: str
    """The area, and its Dagster asset ``lake/<name>`` where a load step writes it."""
    kind: Kind
    tables: Mapping[str, pa.Schema]
    """Its lake tables, in order; written together (one commit per partition)."""
    keys: tuple[str, ...]
    """Its partition columns."""
    description: str = ""
    extract: Callable[..., Snapshot | None] | None = None
    """A snapshot's extraction: ``extract(source, location_id, day)``, its tables (the
    load commits them)
    (``location_id`` None for the tenant's)."""
    per_location: bool = True
    """One partition per location (``--location`` applies), else the tenant's."""
    master_data: bool = False
    """Left out by ``pos-etl load --no-catalog``."""
    from_the_wire: bool = False
    """Its tables hold the spec's resources (their columns name their wire paths)."""
    needs_voucher_url: bool = False
    """Read from the voucher ledger: wired only where ``source.voucher_url`` is set (or
    the sandbox serves it)."""

    def wired(self, settings: Settings) -> bool:
        """Whether these settings have its source."""
        return not self.needs_voucher_url or settings.uses_sandbox or \
            settings.source.voucher_url is not None


def _vouchers(source, location_id: None, day):
    """The ledger's snapshot as every snapshot's extraction is called (it is the tenant's)."""
    return extract_voucher_snapshot(source, day)


AREAS: tuple[LakeArea, ...] = (
    LakeArea("revenue", Kind.REVENUE, REVENUE_TABLES, ("location_id", "business_date"),
             "Receipts, lines, side dishes and payments per location and business date.",
             from_the_wire=True),
    LakeArea("catalog", Kind.SNAPSHOT, CATALOG_TABLES, ("location_id", "snapshot_date"),
             "Products, categories and spots of every location, today.",
             extract_catalog_snapshot, master_data=True, from_the_wire=True),
    LakeArea("menu", Kind.SNAPSHOT, MENU_TABLES, ("location_id", "snapshot_date"),
             "The public menu tree of every location, today.",
             extract_menu_snapshot, master_data=True, from_the_wire=True),
    LakeArea("vouchers", Kind.SNAPSHOT, VOUCHER_TABLES, ("snapshot_date",),
             "Every voucher of the ledger and its transactions, today.",
             _vouchers, per_location=False, from_the_wire=True, needs_voucher_url=True),
    LakeArea("drift", Kind.RECORD, DRIFT_TABLES,
             ("location_id", "business_date", "detected"),
             "Committed days the POS changed afterwards, found by the drift check."),
    LakeArea("ledger", Kind.RECORD, LEDGER_TABLES, ("period",),
             "Closed booking periods and every booking they booked."),
    LakeArea("exports", Kind.RECORD, EXPORT_TABLES, ("export_id",),
             "Every booking file an export wrote, and its totals."),
)
AREA: dict[str, LakeArea] = {area.name: area for area in AREAS}
SNAPSHOTS: tuple[LakeArea, ...] = tuple(a for a in AREAS if a.kind is Kind.SNAPSHOT)

SPEC_LANDING: dict[str, str] = landing(
    {t: s for area in AREAS if area.from_the_wire for t, s in area.tables.items()})
"""Every field of the spec's resources that the pipeline reads, and its lake column
(``Resource.wire.path`` -> ``table.column``, from each table's schema: the spec objects
its rows come from, each column's wire path). A test holds this map to the spec's
pydantic models, so a field cannot be dropped silently."""
