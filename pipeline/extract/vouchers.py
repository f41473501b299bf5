"""Voucher ledger -> a daily snapshot of every voucher (and its transactions, if listed).

The ledger is tenant-wide, so a snapshot is partitioned by date only. Amounts stay
integer cents. The shape of ``GET /vouchers`` is not in the spec: a bare array and
``{"data": [...]}`` are both read; a ``transactions`` list per voucher, where the server
sends one, becomes ``voucher_transactions``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as pa

from pipeline.extract.snapshots import Snapshot, validate_records, write_snapshot
from pipeline.pos_api import models as m

S, I64, TS = pa.string(), pa.int64(), pa.timestamp("s", tz="UTC")
_KEY = [pa.field("snapshot_date", pa.date32(), nullable=False)]
VOUCHER_TABLES: dict[str, pa.Schema] = {
    "vouchers": pa.schema(_KEY + [pa.field(*f) for f in (
        ("voucher_id", S, False), ("voucher_code", S), ("category_id", I64),
        ("category_name", S), ("amount_cents", I64), ("balance_cents", I64),
        ("max_amount_cents", I64), ("code_id", S), ("starts_at", TS), ("expires_at", TS),
        ("is_enabled", pa.bool_()), ("comment", S), ("category_redemption_cap", I64),
        ("category_payment_provider_id", S), ("created_at", TS), ("discriminator", S))]),
    "voucher_transactions": pa.schema(_KEY + [pa.field(*f) for f in (
        ("voucher_id", S, False), ("transaction_id", I64, False), ("transaction_type", S),
        ("amount_cents", I64), ("created_at", TS), ("client_reference", S))]),
}


class _Transaction(m.PosModel):
    transaction_id: int
    type: str | None = None
    amount: int
    created_at: str | None = None
    client_reference: str | None = None


def load_voucher_snapshot(source, lake, snapshot_date: date) -> Snapshot | None:
    """Snapshot the ledger into the lake; None where no ``voucher_url`` is configured."""
    client = source.voucher_client()
    if client is None:
        return None
    where = f"voucher ledger, snapshot {snapshot_date.isoformat()}"
    with client:
        raw = client.vouchers()
    vouchers = validate_records(raw, m.Voucher, where)
    rows, txns = [], []
    for v, body in zip(vouchers, raw, strict=True):
        gift = v.gift or m.Gift(amount=0)
        rows.append({
            "voucher_id": v.id, "voucher_code": v.voucher_code,
            "category_id": v.category_id, "category_name": v.category_name,
            "amount_cents": gift.amount, "balance_cents": gift.balance,
            "max_amount_cents": gift.max_amount, "code_id": v.code_id,
            "starts_at": v.start_date, "expires_at": v.expiration_date,
            "is_enabled": v.enabled, "comment": v.comment,
            "category_redemption_cap": v.category_nr_of_times_redeemable_per_unit,
            "category_payment_provider_id": v.category_external_payment_provider_id,
            "created_at": v.created_at, "discriminator": v.discriminator})
        listed = body.get("transactions") if isinstance(body, dict) else None
        for t in validate_records(listed or [], _Transaction, f"{where}: voucher {v.id}"):
            txns.append({"voucher_id": v.id, "transaction_id": t.transaction_id,
                         "transaction_type": t.type, "amount_cents": t.amount,
                         "created_at": _instant(t.created_at),
                         "client_reference": t.client_reference})
    return write_snapshot(lake, "vouchers", VOUCHER_TABLES,
                          {"vouchers": rows, "voucher_transactions": txns},
                          snapshot_date, where, stats=client.stats)


def _instant(value: str | None) -> datetime | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
