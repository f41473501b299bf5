-- turnover_net follows the spec (2.2): the receipts the macro is_revenue_effective keeps, sum of
-- netAmount * quantity over their items.
with

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
        sum(guest_count) as guest_count

    from revenue_receipts
    group by location_id, business_date

)

select * from final
