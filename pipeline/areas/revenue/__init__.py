"""The revenue area: receipts, lines, side dishes and payments per location and business
date (spec 2.1), read from the POS's revenue report. Its tables (``tables``), its two
readings of an answer (``columnar``, ``by_receipt``, chosen by ``extract``), the contract
a receipt is held to (``contract``), its commit (``commits``) and the revenue rule's
macros run over a partition (``macros``); ``pipeline.load.steps.load_revenue_days`` runs
it over days and locations."""

from pipeline.areas.base import Kind, LakeArea
from pipeline.areas.revenue.tables import REVENUE_TABLES
from pipeline.sources.pos import SOURCE as POS

AREA = LakeArea(
    "revenue", Kind.REVENUE, 0, REVENUE_TABLES, ("location_id", "business_date"),
    "Receipts, lines, side dishes and payments per location and business date.",
    source=POS, from_the_wire=True)
