with

items as (

    select * from fct_receipt_items

),

final as (

    select
        location_id,
        business_date,
        tax_rate_percent,
        count(*) as item_line_count,
        sum(line_net_amount) as net_amount,
        sum(line_tax_amount) as tax_amount,
        sum(line_gross_amount) as gross_amount

    from items
    where is_revenue_effective
    group by location_id, business_date, tax_rate_percent

),

rounded as (

    select
        *,
        round_cent(net_amount) as net_amount_rounded,
        cast(round_cent(gross_amount) - round_cent(net_amount) as decimal(18, 2))
            as tax_amount_rounded,
        round_cent(gross_amount) as gross_amount_rounded

    from final

)

select * from rounded
