-- The bridge from the day's payments to its turnover, in EUR, read top to bottom:
-- 100 net revenue after discounts, 200 its VAT, 300 tips, 401 and on: one line per
-- non-revenue payment group (voucher sales, staff meals...; a single-purpose voucher's
-- sale is revenue), 800 single-purpose vouchers redeemed (revenue at their sale), 900 the
-- difference; lines 100 to 900 add up to line 999, the payments. The spec's turnover
-- (line 50) stands above, outside the sum: it is before discounts.
with

close as (

    select * from rpt_daily_close_current

),

receipts as (

    select * from fct_receipts
    where is_settlement and not is_revenue_effective

),

prepaid_sales as (

    select
        location_id,
        business_date,
        transaction_id,
        sum(sold_amount) as sold_amount

    from fct_prepaid_vouchers
    group by location_id, business_date, transaction_id

),

non_revenue_receipts as (

    select
        receipts.location_id,
        receipts.business_date,
        receipts.payment_group_name,
        receipts.total_amount - coalesce(prepaid_sales.sold_amount, 0) as amount

    from receipts
    left join prepaid_sales
        on receipts.location_id = prepaid_sales.location_id
        and receipts.business_date = prepaid_sales.business_date
        and receipts.transaction_id = prepaid_sales.transaction_id

),

non_revenue as (

    select
        location_id,
        business_date,
        400 + row_number() over (
            partition by location_id, business_date order by payment_group_name
        ) as line_number,
        'non-revenue: ' || coalesce(nullif(payment_group_name, ''), '(no group)') as line,
        payment_group_name,
        round_cent(sum(amount)) as amount

    from non_revenue_receipts
    group by location_id, business_date, payment_group_name

),

fixed_lines as (

    select
        close.location_id,
        close.business_date,
        bridge.line_number,
        bridge.line,
        null::varchar as payment_group_name,
        bridge.amount

    from close
    cross join lateral (
        values
        (50, 'spec turnover net (before discounts, not in the sum)', close.spec_turnover_net),
        (100, 'revenue net after discounts', close.net_amount),
        (200, 'VAT after discounts', close.vat_amount),
        (300, 'tips', close.tip_amount),
        (350, 'collected for others (pass-through)', close.pass_through_amount),
        (800, 'single-purpose vouchers redeemed', close.prepaid_redeemed_amount),
        (900, 'difference', close.difference_amount),
        (999, 'payments', close.payment_amount)
    ) as bridge (line_number, line, amount)

),

final as (

    select * from fixed_lines
    union all
    select * from non_revenue

)

select * from final
