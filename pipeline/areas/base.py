"""What an area is: what one step of a load (or of another command) writes together.

Each area is a folder of ``pipeline.areas`` whose ``__init__`` declares it (its ``AREA``):
its lake tables, its partition keys, its source and, for a snapshot, its extraction. The
registry (``pipeline.areas``) finds them; nothing else lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from pipeline.core.settings import Settings
from pipeline.extract.snapshots import Snapshot
from pipeline.sources.base import Source


class Kind(Enum):
    """How an area is written."""

    REVENUE = "revenue"
    """Per location and business date, a range of dates per load (``lake/revenue``)."""
    SNAPSHOT = "snapshot"
    """Today's state of a source, per location or for the tenant, once per load."""
    RECORD = "record"
    """Committed by another step: the drift check, closing a period, an export."""


@dataclass(frozen=True)
class LakeArea:
    name: str
    """The area, and its Dagster asset ``lake/<name>`` where a load step writes it."""
    kind: Kind
    rank: int
    """Its place among the areas (in the load's summary, the lake views, the docs)."""
    tables: Mapping[str, pa.Schema]
    """Its lake tables, in order; written together (one commit per partition)."""
    keys: tuple[str, ...]
    """Its partition columns."""
    description: str = ""
    source: Source | None = None
    """What it is read from (None: written by a step of this pipeline)."""
    extract: Callable[..., Snapshot | None] | None = None
    """A snapshot's extraction: ``extract(source, location_id, day)`` (``source``: the
    run's open sources, ``location_id`` None for the tenant's), its tables; the load
    commits them."""
    master_data: bool = False
    """Left out by ``pos-etl load --no-catalog``."""
    from_the_wire: bool = False
    """Its tables hold the spec's resources (their columns name their wire paths)."""

    @property
    def per_location(self) -> bool:
        """One partition per location (``--location`` applies), else the tenant's."""
        return "location_id" in self.keys

    def wired(self, settings: Settings) -> bool:
        """Whether these settings have its source."""
        return self.source is None or self.source.served(settings)
