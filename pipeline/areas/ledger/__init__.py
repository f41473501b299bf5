"""The ledger area: closed booking periods and every booking they booked
(``pipeline.accounting.ledger``)."""

from pipeline.areas.base import Kind, LakeArea
from pipeline.areas.ledger.tables import LEDGER_TABLES

AREA = LakeArea(
    "ledger", Kind.RECORD, 5, LEDGER_TABLES, ("period",),
    "Closed booking periods and every booking they booked.")
