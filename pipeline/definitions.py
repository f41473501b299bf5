"""The Dagster code location (``workspace.yaml``): wiring only. The config file is read
once, when the code loads; what it builds is ``pipeline.orchestration.code_location``."""

from __future__ import annotations

import dagster as dg

from pipeline.orchestration.code_location import build_defs
from pipeline.orchestration.configs import load_settings


@dg.definitions
def defs() -> dg.Definitions:
    """The code location: ``$POS_ETL_CONFIG``, else the built-in sandbox."""
    return build_defs(load_settings())
