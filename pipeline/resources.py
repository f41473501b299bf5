"""Dagster resources, split by what they touch: the POS, the lake, the warehouse (and the
reporter of a run started from the command line).

All three are made from the settings read once at wiring time (``definitions.py``). Only
``pos`` opens anything: the POS clients (and the built-in sandbox where no ``base_url``
is configured), once per run and only in runs whose steps call the POS, so a warehouse
build never starts a sandbox. API keys are read from each location's environment
variable when a client is first made, never at import time, and never logged.
"""

from __future__ import annotations

import dagster as dg

from pipeline.lake import Lake, LakeStore
from pipeline.objectlake import ObjectLake
from pipeline.reporting import Reporter
from pipeline.settings import Settings
from pipeline.source import PosSource
from pipeline.warehouse import Warehouse, config_macros


def pos_resource(settings: Settings) -> dg.ResourceDefinition:
    """The configured POS (or the built-in sandbox), open for the length of a run."""

    @dg.resource(description="The configured POS source, or the built-in sandbox.")
    def pos(_init: dg.InitResourceContext):
        with PosSource(settings) as source:
            yield source

    return pos


def make_lake(settings: Settings) -> LakeStore:
    """The local lake, or the lake on object storage where ``[lake] url`` is set (its local
    mirror, what builds read, in ``<data_dir>/lake_mirror``)."""
    if settings.lake.url:
        return ObjectLake(settings.lake.url, settings.warehouse.data_dir / "lake_mirror",
                          settings.lake.endpoint_url)
    return Lake(settings.warehouse.lake_dir)


def build_resources(settings: Settings, reporter: Reporter | None = None) -> dict[str, object]:
    """The resources of a code location: ``pos``, ``lake``, ``warehouse``, and the
    ``reporter`` its runs tell how they go (by default one that says nothing)."""
    lake = make_lake(settings)
    return {"pos": pos_resource(settings), "lake": lake, "reporter": reporter or Reporter(),
            "warehouse": Warehouse(settings.warehouse.warehouse_path, lake,
                                   settings.warehouse.memory_limit,
                                   config_macros(settings.accounting,
                                                 settings.locations[0].timezone),
                                   settings.warehouse.storage_version)}
