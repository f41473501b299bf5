"""Voucher ledger -> a daily snapshot of every voucher (and its transactions, if listed).

The ledger is tenant-wide, so a snapshot is partitioned by date only. Amounts stay
integer cents. The shape of ``GET /vouchers`` is not in the spec: a bare array and
``{"data": [...]}`` are both read; a ``transactions`` list per voucher, where the server
sends one, becomes ``voucher_transactions``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as pa

from pipeline.extract.schemas import lake_schema, wired
from pipeline.extract.snapshots import Snapshot, row_of, snapshot_of, validate_records
from pipeline.pos_api import models as m
from pipeline.sources.vouchers import SOURCE as LEDGER

S, I64, TS = pa.string(), pa.int64(), pa.timestamp("s", tz="UTC")
_KEY = [wired("snapshot_date", pa.date32(), False)]
VOUCHER_TABLES: dict[str, pa.Schema] = {
    "vouchers": lake_schema(("Voucher",), _KEY + [wired(*f) for f in (
        ("voucher_id", S, False, "id"), ("voucher_code", S, True, "voucherCode"),
        ("category_id", I64, True, "categoryId"), ("category_name", S, True, "categoryName"),
        ("amount_cents", I64, True, "gift.amount"), ("balance_cents", I64, True, "gift.balance"),
        ("max_amount_cents", I64, True, "gift.maxAmount"), ("code_id", S, True, "codeId"),
        ("starts_at", TS, True, "startDate"), ("expires_at", TS, True, "expirationDate"),
        ("is_enabled", pa.bool_(), True, "enabled"), ("comment", S, True, "comment"),
        ("category_redemption_cap", I64, True, "categoryNrOfTimesRedeemablePerUnit"),
        ("category_payment_provider_id", S, True, "categoryExternalPaymentProviderId"),
        ("created_at", TS, True, "createdAt"), ("discriminator", S, True, "discriminator"))]),
    "voucher_transactions": pa.schema(_KEY + [wired(*f) for f in (
        ("voucher_id", S, False), ("transaction_id", I64, False), ("transaction_type", S),
        ("amount_cents", I64), ("created_at", TS), ("client_reference", S))]),
}
"""``vouchers`` from the spec's Voucher; ``voucher_transactions`` from a ``transactions``
list the spec does not show (no source, no wire paths)."""


class _Transaction(m.PosModel):
    transaction_id: int
    type: str | None = None
    amount: int
    created_at: str | None = None
    client_reference: str | None = None


def extract_voucher_snapshot(source, location_id: None, snapshot_date: date
                             ) -> Snapshot | None:
    """The ledger's vouchers and their transactions: its snapshot's tables (the tenant's:
    ``location_id`` is None); None where the run does not read the ledger."""
    client = source.tenant_client(LEDGER.name)
    if client is None:
        return None
    where = f"voucher ledger, snapshot {snapshot_date.isoformat()}"
    with client:
        raw = client.vouchers()
    vouchers = validate_records(raw, m.Voucher, where)
    rows, txns = [], []
    for v, body in zip(vouchers, raw, strict=True):
        wire = v.model_dump(by_alias=True)
        wire["gift"] = wire["gift"] or {"amount": 0}  # no gift: nothing was sold
        rows.append(row_of(VOUCHER_TABLES["vouchers"], wire))
        listed = body.get("transactions") if isinstance(body, dict) else None
        for t in validate_records(listed or [], _Transaction, f"{where}: voucher {v.id}"):
            txns.append({"voucher_id": v.id, "transaction_id": t.transaction_id,
                         "transaction_type": t.type, "amount_cents": t.amount,
                         "created_at": _instant(t.created_at),
                         "client_reference": t.client_reference})
    return snapshot_of(VOUCHER_TABLES, {"vouchers": rows, "voucher_transactions": txns},
                       snapshot_date, where, stats=client.stats)


def _instant(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
