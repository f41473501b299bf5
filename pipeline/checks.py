"""Data tests of the warehouse: each is a query that returns the rows breaking a rule.

They run on the freshly built file before it is switched in, and surface in Dagster as
asset checks of the model they guard.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb


@dataclass(frozen=True)
class DataCheck:
    """A rule: ``sql`` returns the rows that break it. A check that reads partitioned
    models only runs on the partitions a build computed, so it returns their keys."""

    name: str
    model: str
    description: str
    sql: str
    blocking: bool = False
    """A failure means the models are wrong (not the source): the build is not published,
    the previous warehouse stays, and nothing downstream sees the wrong figures."""


def _unique(model: str, *keys: str) -> DataCheck:
    cols = ", ".join(keys)
    return DataCheck(
        f"unique_{'_'.join(keys)}", model, f"({cols}) is unique in {model}",
        f"select {cols}, count(*) as n from {model} group by {cols} having count(*) > 1",
        blocking=True)


def _not_null(model: str, *keys: str) -> DataCheck:
    cond = " or ".join(f"{k} is null" for k in keys)
    return DataCheck("not_null_keys", model, f"{', '.join(keys)} are never null in {model}",
                     f"select * from {model} where {cond}", blocking=True)


def _related(model: str, parent: str, *keys: str) -> DataCheck:
    join = " and ".join(f"c.{k} = p.{k}" for k in keys)
    return DataCheck(
        f"relationship_to_{parent}", model, f"every row of {model} has its {parent} row",
        f"select c.* from {model} c left join {parent} p on {join} "
        f"where p.{keys[-1]} is null", blocking=True)


CHECKS: tuple[DataCheck, ...] = (
    _unique("fct_receipts", "location_id", "business_date", "transaction_id"),
    _not_null("fct_receipts", "location_id", "business_date", "transaction_id",
              "transaction_type", "total_amount"),
    _unique("fct_receipt_items", "location_id", "business_date", "transaction_id", "item_key"),
    _not_null("fct_receipt_items", "location_id", "transaction_id", "item_key", "net_amount",
              "quantity"),
    _related("fct_receipt_items", "fct_receipts", "location_id", "transaction_id"),
    _unique("fct_payments", "location_id", "business_date", "transaction_id", "payment_id"),
    _related("fct_payments", "fct_receipts", "location_id", "transaction_id"),
    _unique("fct_item_side_dishes", "location_id", "business_date", "transaction_id",
            "item_key", "side_dish_key"),
    _related("fct_item_side_dishes", "fct_receipt_items", "location_id", "transaction_id",
             "item_key"),
    _unique("fct_turnover_daily", "location_id", "business_date"),
    _unique("dim_products", "location_id", "product_id"),
    _unique("dim_product_categories", "location_id", "category_id"),
    _unique("dim_spots", "location_id", "spot_id"),
    _unique("dim_menu_entries", "location_id", "entry_key"),
    _unique("dim_vouchers", "voucher_id"),
    DataCheck(
        "balance_within_bounds", "dim_vouchers",
        "no voucher balance is negative or above its top-up ceiling",
        "select * from dim_vouchers where balance_cents < 0 "
        "or (max_amount_cents is not null and balance_cents > max_amount_cents)"),
    DataCheck(
        "memberships_match_categories", "dim_products",
        "every productGroupExternalId of a product names a category of the same snapshot",
        "select m.* from staging.stg_pos__product_category_memberships m "
        "left join staging.stg_pos__product_categories c on m.location_id = c.location_id "
        "and m.snapshot_date = c.snapshot_date "
        "and m.category_external_id = c.category_external_id "
        "where c.category_id is null"),
    DataCheck(
        "payments_settle_total", "fct_receipts",
        "the payments of each settled receipt sum to its totalAmount within a cent",
        "select location_id, business_date, transaction_id, total_amount, payments_amount "
        "from fct_receipts "
        "where is_settlement and payment_count > 0 "
        "and abs(total_amount - payments_amount) > 0.01"),
    _unique("rpt_vat_by_rate", "location_id", "business_date", "tax_rate_percent"),
    DataCheck(
        "net_plus_vat_is_gross", "rpt_vat_by_rate",
        "on every row net_after_discount + vat_after_discount = gross_after_discount, and "
        "gross_amount - discount_amount = gross_after_discount",
        "select * from rpt_vat_by_rate "
        "where net_after_discount + vat_after_discount <> gross_after_discount "
        "or gross_amount - discount_amount <> gross_after_discount", blocking=True),
    DataCheck(
        "vat_base_is_paid_net_of_tips", "rpt_vat_by_rate",
        "per location and day, gross_after_discount adds up to what the revenue-effective "
        "receipts were paid net of tips (totalAmount - tip)",
        """
        with paid as (
            select location_id, business_date,
                   cents(sum(total_amount - coalesce(tip_amount, 0))) as paid_net_of_tips
            from fct_receipts where is_revenue_effective group by all
        ), vat as (
            select location_id, business_date, sum(gross_after_discount) as base
            from rpt_vat_by_rate group by all
        )
        select coalesce(p.location_id, v.location_id) as location_id,
               coalesce(p.business_date, v.business_date) as business_date,
               p.paid_net_of_tips, v.base
        from paid p full outer join vat v
          on p.location_id = v.location_id and p.business_date = v.business_date
        where coalesce(p.paid_net_of_tips, 0) <> coalesce(v.base, 0)
        """),
    _unique("rpt_daily_close", "location_id", "business_date"),
    DataCheck(
        "day_is_closed", "rpt_daily_close",
        "the payments of every day cover its revenue, tips and non-revenue settlements to "
        "the cent (difference_amount = 0)",
        "select location_id, business_date, payment_amount, revenue_amount, tip_amount, "
        "non_revenue_amount, difference_amount from rpt_daily_close "
        "where difference_amount <> 0"),
    DataCheck(
        "payments_add_up", "rpt_daily_close",
        "a day's payment_amount is the sum of its rows in rpt_daily_close_payments",
        """
        select c.location_id, c.business_date, c.payment_amount, p.amount
        from rpt_daily_close c
        left join (select location_id, business_date, sum(payment_amount) as amount
                   from rpt_daily_close_payments group by all) p
          on c.location_id = p.location_id and c.business_date = p.business_date
        where c.payment_amount <> coalesce(p.amount, 0)
        """, blocking=True),
    _unique("rpt_payment_reconciliation", "location_id", "business_date", "line_number"),
    DataCheck(
        "bridge_adds_up", "rpt_payment_reconciliation",
        "per location and day, lines 100 to 900 of the bridge add up to line 999 (payments)",
        "select location_id, business_date, "
        "sum(amount) filter (where line_number between 100 and 900) as bridged, "
        "sum(amount) filter (where line_number = 999) as payments "
        "from rpt_payment_reconciliation group by all "
        "having bridged is distinct from payments", blocking=True),
    DataCheck(
        "turnover_rule_cross_check", "fct_turnover_daily",
        "turnover_net equals the spec's rule recomputed from the staged lines",
        """
        with independent as (
            select i.location_id, i.business_date, sum(line_amount(i.net_amount, i.quantity)) as net
            from staging.stg_pos__receipt_items i
            where exists (
                select 1 from staging.stg_pos__receipts r
                where r.location_id = i.location_id and r.transaction_id = i.transaction_id
                  and is_revenue_effective(r.payment_group_name, r.transaction_type))
            group by all
        )
        select coalesce(t.location_id, x.location_id) as location_id,
               coalesce(t.business_date, x.business_date) as business_date,
               t.turnover_net, x.net
        from fct_turnover_daily t
        full outer join independent x
          on t.location_id = x.location_id and t.business_date = x.business_date
        where coalesce(t.turnover_net, 0) <> coalesce(x.net, 0)
        """, blocking=True),
)


@dataclass
class CheckOutcome:
    check: DataCheck
    failing_rows: int
    sample: list[tuple]

    @property
    def passed(self) -> bool:
        return self.failing_rows == 0


def run_check(con: duckdb.DuckDBPyConnection, check: DataCheck) -> CheckOutcome:
    """One data check on an open warehouse: how many rows break it, and a few of them."""
    rows = con.execute(f"select * from ({check.sql}) limit 5").fetchall()
    count = con.execute(f"select count(*) from ({check.sql})").fetchone()[0] if rows else 0
    return CheckOutcome(check, count, rows)


def run_checks(con: duckdb.DuckDBPyConnection) -> list[CheckOutcome]:
    """Run every data check on an open warehouse (over all of it)."""
    return [run_check(con, check) for check in CHECKS]
