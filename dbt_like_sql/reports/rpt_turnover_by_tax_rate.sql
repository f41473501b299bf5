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

)

select * from final
