-- turnover_net follows the spec (2.2): the receipts the macro is_revenue_effective keeps, sum of
-- netAmount * quantity over their items. Each exact sum has a companion rounded to the cent
-- (round_cent of the exact sum; the tax's is gross minus net, so the rounded three add up).
-- is_provisional: the date was loaded before it was over at the location (the day under
-- way), so its figures are not final; the next load once it is over replaces them.
with

loads as (

    select * from lake.revenue_loads

),

receipts as (

    select * from fct_receipts

),

revenue_receipts as (

    select *
    from receipts
    where is_revenue_effective

),

final as (

    select
        location_id,
        business_date,
        count(*) as revenue_receipt_count,
        count(*) filter (where transaction_type = 'RechnungZurückholen') as reversal_count,
        sum(items_net_amount) as turnover_net,
        sum(items_gross_amount) as turnover_gross,
        sum(items_gross_amount) - sum(items_net_amount) as turnover_tax,
        sum(total_amount) as total_amount,
        sum(tip_amount) as tip_amount,
        sum(discount_amount) as discount_amount,
        cast(sum(guest_count) as bigint) as guest_count

    from revenue_receipts
    group by location_id, business_date

),

rounded as (

    select
        final.*,
        round_cent(final.turnover_net) as turnover_net_rounded,
        round_cent(final.turnover_gross) as turnover_gross_rounded,
        cast(
            round_cent(final.turnover_gross) - round_cent(final.turnover_net) as decimal(18, 2)
        ) as turnover_tax_rounded,
        round_cent(final.total_amount) as total_amount_rounded,
        round_cent(final.tip_amount) as tip_amount_rounded,
        round_cent(final.discount_amount) as discount_amount_rounded,
        coalesce(loads.provisional, false) as is_provisional

    from final
    left join loads
        on final.location_id = loads.location_id
        and final.business_date = loads.business_date

)

select * from rounded
