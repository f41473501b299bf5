"""The Dagster code location (``workspace.yaml``): wiring only. The config file is read
once, when the code loads; what it builds is ``pipeline.orchestration.code_location``."""

from __future__ import annotations

import dagster as dg

from pipeline.core.configs import load_settings
from pipeline.orchestration.code_location import build_defs


@dg.definitions
def defs() -> dg.Definitions:
    """The code location: ``$POS_ETL_CONFIG``, else the built-in sandbox."""
    return build_defs(load_settings())
