"""The lake's areas, each a folder of this package whose ``__init__`` declares it (its
``AREA``, ``pipeline.areas.base.LakeArea``), found here: nothing else lists them.

An area is what one step of a load writes together: a location's revenue of a business
date, a location's catalog or menu of a day, a tenant's snapshot of a day, and what other
steps commit (the drift check's findings, closed periods, exported files). Everything that
names the areas derives from ``AREAS``: the snapshot assets and the load's selection
(``pipeline.orchestration``), ``--location`` and ``--no-catalog``, the load's summary, the
warehouse's lake views (``pipeline.warehouse.lake_tables.LAKE_AREAS``) and where every field of
the spec lands (``SPEC_LANDING``). A new area is its folder here, its source where that is
new (``pipeline.sources``), its staging model, the sandbox's side and a test
(docs/architecture.md walks through one).
"""

from __future__ import annotations

from pipeline.areas.base import Kind, LakeArea
from pipeline.core.registry import declared
from pipeline.extract.schemas import landing

AREAS: tuple[LakeArea, ...] = declared(__name__, "AREA", LakeArea, lambda a: a.rank)
AREA: dict[str, LakeArea] = {area.name: area for area in AREAS}
SNAPSHOTS: tuple[LakeArea, ...] = tuple(a for a in AREAS if a.kind is Kind.SNAPSHOT)

SPEC_LANDING: dict[str, str] = landing(
    {t: s for area in AREAS if area.from_the_wire for t, s in area.tables.items()})
"""Every field of the spec's resources that the pipeline reads, and its lake column
(``Resource.wire.path`` -> ``table.column``, from each table's schema: the spec objects
its rows come from, each column's wire path). A test holds this map to the spec's
pydantic models, so a field cannot be dropped silently."""

__all__ = ["AREA", "AREAS", "SNAPSHOTS", "SPEC_LANDING", "Kind", "LakeArea"]
