"""The ledger area's tables (``pipeline.accounting.ledger`` commits them): each closed
booking period, every booking it booked, and its reports as closed."""

from __future__ import annotations

import pyarrow as pa

MONEY = pa.decimal128(18, 2)
LEDGER_TABLES: dict[str, pa.Schema] = {
    "closed_periods": pa.schema([
        pa.field("period", pa.string(), False), pa.field("first_date", pa.date32(), False),
        pa.field("last_date", pa.date32(), False), pa.field("year_start", pa.date32(), False),
        pa.field("closed_at", pa.timestamp("us", tz="UTC"), False),
        pa.field("format", pa.string(), False), pa.field("file_name", pa.string(), False),
        pa.field("sha256", pa.string(), False), pa.field("content", pa.binary(), False),
        pa.field("bookings", pa.int64(), False),
        # closed with dates missing (--allow-incomplete): which; null when complete
        pa.field("incomplete", pa.string()),
        # closed with bookings on the suspense account (--allow-suspense): which; else null
        pa.field("suspense", pa.string()),
        # its reports' rows were recorded as closed (closed_vat_by_rate, ...); null: closed
        # by a pos-etl before that, its reports show the data as it is now
        pa.field("reports_frozen", pa.bool_())]),
    "closed_bookings": pa.schema([
        pa.field("period", pa.string(), False), pa.field("location_id", pa.int32(), False),
        pa.field("business_date", pa.date32(), False),
        pa.field("original_date", pa.date32(), False),
        pa.field("booking_number", pa.int32(), False),
        pa.field("document_number", pa.string(), False),
        pa.field("debit_account", pa.string(), False),
        pa.field("credit_account", pa.string(), False), pa.field("amount", MONEY, False),
        pa.field("tax_rate_percent", pa.decimal128(9, 4)), pa.field("tax_amount", MONEY),
        pa.field("booking_kind", pa.string(), False),
        pa.field("booking_text", pa.string(), False), pa.field("cost_center", pa.string())]),
    # the reports of the period's days as they were closed (rpt_<name>_current then):
    # what rpt_vat_by_rate, rpt_daily_close and rpt_cash_book show of a closed period
    "closed_vat_by_rate": pa.schema([
        pa.field("period", pa.string(), False), pa.field("location_id", pa.int32(), False),
        pa.field("business_date", pa.date32(), False),
        pa.field("corrects_date", pa.date32()),
        pa.field("tax_rate_percent", pa.decimal128(9, 4)),
        *(pa.field(n, pa.int64()) for n in ("revenue_receipt_count", "item_line_count")),
        *(pa.field(n, MONEY) for n in (
            "gross_amount", "discount_amount", "prepaid_sold_amount", "prepaid_redeemed_amount",
            "gross_after_discount", "net_after_discount", "vat_after_discount"))]),
    "closed_daily_close": pa.schema([
        pa.field("period", pa.string(), False), pa.field("location_id", pa.int32(), False),
        pa.field("business_date", pa.date32(), False),
        pa.field("revenue_receipt_count", pa.int64()),
        *(pa.field(n, MONEY) for n in (
            "gross_amount", "discount_amount", "revenue_amount", "net_amount", "vat_amount",
            "tip_amount", "pass_through_amount")),
        pa.field("non_revenue_receipt_count", pa.int64()),
        *(pa.field(n, MONEY) for n in (
            "non_revenue_amount", "voucher_sold_amount", "voucher_redeemed_amount",
            "prepaid_redeemed_amount", "payment_amount", "difference_amount")),
        pa.field("reversal_count", pa.int64()), pa.field("reversal_amount", MONEY),
        pa.field("void_count", pa.int64()), pa.field("void_gross_amount", MONEY),
        pa.field("spec_turnover_net", MONEY), pa.field("is_closed", pa.bool_())]),
    "closed_cash_book": pa.schema([
        pa.field("period", pa.string(), False), pa.field("location_id", pa.int32(), False),
        pa.field("business_date", pa.date32(), False),
        pa.field("corrects_date", pa.date32()),
        *(pa.field(n, MONEY) for n in (
            "opening_cash", "cash_takings", "cash_deposits", "cash_withdrawals",
            "counted_cash", "cash_difference", "closing_cash", "lowest_cash",
            "terminal_cut_amount")),
        pa.field("cash_counts", pa.int64())]),
}
"""The ledger area's tables: one row per closed period, one per booking it booked, and the
rows of its reports as closed."""
FROZEN_REPORTS = {"closed_vat_by_rate": "rpt_vat_by_rate",
                  "closed_daily_close": "rpt_daily_close",
                  "closed_cash_book": "rpt_cash_book"}
"""The ledger's table of a report's rows as closed -> the report (its rows as the data
says now: ``<report>_current``)."""
