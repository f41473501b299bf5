"""Dagster definitions: wiring only."""

import dagster as dg

from pipeline.assets.catalog import catalog_lake
from pipeline.assets.menu import menu_lake
from pipeline.assets.models import warehouse_models
from pipeline.assets.revenue import revenue_lake
from pipeline.assets.vouchers import voucher_lake
from pipeline.resources import PosApiResource
from pipeline.schedules import (
    catalog_job,
    nightly_catalog,
    nightly_revenue,
    nightly_vouchers,
    revenue_job,
    voucher_job,
    warehouse_job,
)

defs = dg.Definitions(
    assets=[revenue_lake, catalog_lake, menu_lake, voucher_lake, warehouse_models],
    jobs=[revenue_job, catalog_job, voucher_job, warehouse_job],
    schedules=[nightly_revenue, nightly_catalog, nightly_vouchers],
    resources={"pos": PosApiResource()},
)
