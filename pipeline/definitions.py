"""Dagster definitions: wiring only."""

import dagster as dg

from pipeline.assets.catalog import catalog_lake
from pipeline.assets.models import warehouse_models
from pipeline.assets.revenue import revenue_lake
from pipeline.resources import PosApiResource
from pipeline.schedules import (
    catalog_job,
    nightly_catalog,
    nightly_revenue,
    revenue_job,
    warehouse_job,
)

defs = dg.Definitions(
    assets=[revenue_lake, catalog_lake, warehouse_models],
    jobs=[revenue_job, catalog_job, warehouse_job],
    schedules=[nightly_revenue, nightly_catalog],
    resources={"pos": PosApiResource()},
)
