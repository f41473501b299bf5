"""The vouchers area: every voucher of the voucher ledger and its transactions, today
(spec 4.5); the tenant's, not a location's."""

from pipeline.areas.base import Kind, LakeArea
from pipeline.areas.vouchers.extract import VOUCHER_TABLES, extract_voucher_snapshot
from pipeline.sources.vouchers import SOURCE as LEDGER

AREA = LakeArea(
    "vouchers", Kind.SNAPSHOT, 3, VOUCHER_TABLES, ("snapshot_date",),
    "Every voucher of the ledger and its transactions, today.",
    source=LEDGER, extract=extract_voucher_snapshot, from_the_wire=True)
