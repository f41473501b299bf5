"""The exports area: every booking file an export wrote, and its totals
(``pipeline.accounting.ledger``)."""

from pipeline.areas.base import Kind, LakeArea
from pipeline.areas.exports.tables import EXPORT_TABLES

AREA = LakeArea(
    "exports", Kind.RECORD, 6, EXPORT_TABLES, ("export_id",),
    "Every booking file an export wrote, and its totals.")
