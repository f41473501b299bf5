-- The daily close (Z-report), in EUR. Revenue is the revenue-effective settlements' gross
-- after discounts (rpt_vat_by_rate, its net and VAT per rate there); tips apart; settlements
-- of other payment groups (voucher sales, staff meals) apart from revenue. difference_amount
-- is what the payments leave uncovered (negative) or exceed: 0 means the day is closed.
-- A single-purpose voucher (fct_prepaid_vouchers) is revenue when sold, not a non-revenue
-- settlement; what it pays of a receipt was revenue at its sale (prepaid_redeemed_amount).
-- What the receipts collected for someone else (fct_pass_through: a tourist tax) is apart
-- from revenue too (pass_through_amount).
with

receipts as (

    select * from fct_receipts

),

vat as (

    select * from rpt_vat_by_rate_current

),

payments as (

    select * from rpt_daily_close_payments

),

prepaid as (

    select * from fct_prepaid_vouchers

),

pass_through as (

    select * from fct_pass_through

),

turnover as (

    select * from fct_turnover_daily

),

classified as (

    select
        *,
        is_revenue_effective and transaction_type = 'RechnungZurückholen' as is_reversal,
        transaction_type = 'Stornieren' as is_void,
        is_settlement and not is_revenue_effective as is_non_revenue

    from receipts

),

days as (

    select
        location_id,
        business_date,
        count(*) filter (where is_revenue_effective) as revenue_receipt_count,
        count(*) filter (where is_reversal) as reversal_count,
        round_cent(coalesce(sum(total_amount) filter (where is_reversal), 0))
            as reversal_amount,
        count(*) filter (where is_void) as void_count,
        round_cent(coalesce(sum(items_gross_amount) filter (where is_void), 0))
            as void_gross_amount,
        round_cent(coalesce(sum(tip_amount) filter (where is_revenue_effective), 0))
            as tip_amount,
        count(*) filter (where is_non_revenue) as non_revenue_receipt_count,
        round_cent(coalesce(sum(total_amount) filter (where is_non_revenue), 0))
            as non_revenue_amount,
        round_cent(coalesce(sum(total_amount) filter (
            where is_non_revenue and is_voucher_sale(payment_group_name)
        ), 0)) as voucher_sold_amount

    from classified
    where is_settlement or is_void
    group by location_id, business_date

),

vat_totals as (

    select
        location_id,
        business_date,
        round_cent(sum(gross_amount)) as gross_amount,
        round_cent(sum(discount_amount)) as discount_amount,
        round_cent(sum(gross_after_discount)) as revenue_amount,
        round_cent(sum(net_after_discount)) as net_amount,
        round_cent(sum(vat_after_discount)) as vat_amount

    from vat
    group by location_id, business_date

),

prepaid_totals as (

    select
        location_id,
        business_date,
        sum(sold_amount) as sold_amount,
        sum(redeemed_amount) as redeemed_amount

    from prepaid
    group by location_id, business_date

),

pass_through_totals as (

    select
        location_id,
        business_date,
        sum(amount) as amount

    from pass_through
    group by location_id, business_date

),

payment_totals as (

    select
        location_id,
        business_date,
        round_cent(sum(payment_amount)) as payment_amount,
        round_cent(coalesce(sum(payment_amount) filter (where is_voucher_payment), 0))
            as voucher_redeemed_amount

    from payments
    group by location_id, business_date

),

final as (

    select
        days.location_id,
        days.business_date,
        days.revenue_receipt_count,
        round_cent(coalesce(vat_totals.gross_amount, 0)) as gross_amount,
        round_cent(coalesce(vat_totals.discount_amount, 0)) as discount_amount,
        round_cent(coalesce(vat_totals.revenue_amount, 0)) as revenue_amount,
        round_cent(coalesce(vat_totals.net_amount, 0)) as net_amount,
        round_cent(coalesce(vat_totals.vat_amount, 0)) as vat_amount,
        days.tip_amount,
        round_cent(coalesce(pass_through_totals.amount, 0)) as pass_through_amount,
        days.non_revenue_receipt_count,
        round_cent(days.non_revenue_amount - coalesce(prepaid_totals.sold_amount, 0))
            as non_revenue_amount,
        days.voucher_sold_amount,
        round_cent(coalesce(payment_totals.voucher_redeemed_amount, 0)) as voucher_redeemed_amount,
        round_cent(coalesce(prepaid_totals.redeemed_amount, 0)) as prepaid_redeemed_amount,
        round_cent(coalesce(payment_totals.payment_amount, 0)) as payment_amount,
        round_cent(
            coalesce(payment_totals.payment_amount, 0)
            - coalesce(vat_totals.revenue_amount, 0)
            - days.tip_amount
            - coalesce(pass_through_totals.amount, 0)
            - (days.non_revenue_amount - coalesce(prepaid_totals.sold_amount, 0))
            - coalesce(prepaid_totals.redeemed_amount, 0)
        ) as difference_amount,
        days.reversal_count,
        days.reversal_amount,
        days.void_count,
        days.void_gross_amount,
        round_cent(coalesce(turnover.turnover_net, 0)) as spec_turnover_net

    from days
    left join vat_totals
        on days.location_id = vat_totals.location_id
        and days.business_date = vat_totals.business_date
    left join payment_totals
        on days.location_id = payment_totals.location_id
        and days.business_date = payment_totals.business_date
    left join prepaid_totals
        on days.location_id = prepaid_totals.location_id
        and days.business_date = prepaid_totals.business_date
    left join pass_through_totals
        on days.location_id = pass_through_totals.location_id
        and days.business_date = pass_through_totals.business_date
    left join turnover
        on days.location_id = turnover.location_id
        and days.business_date = turnover.business_date

)

select
    *,
    difference_amount = 0 as is_closed

from final
