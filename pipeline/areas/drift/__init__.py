"""The drift area: committed days the POS changed afterwards, found by the drift check
(``pipeline.load.drift``)."""

from pipeline.areas.base import Kind, LakeArea
from pipeline.areas.drift.tables import DRIFT_TABLES

AREA = LakeArea(
    "drift", Kind.RECORD, 4, DRIFT_TABLES, ("location_id", "business_date", "detected"),
    "Committed days the POS changed afterwards, found by the drift check.")
