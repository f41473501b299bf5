with

items as (

    select * from stg_pos__receipt_items

),

receipts as (

    select * from stg_pos__receipts

),

final as (

    select
        -- unit prices, not line totals: a sum over lines takes line_*_amount
        items.* replace (
            exact_amount(items.unit_gross_price) as unit_gross_price,
            exact_amount(items.unit_net_price) as unit_net_price,
            exact_amount(items.purchase_price) as purchase_price
        ),
        line_amount(items.unit_net_price, items.quantity) as line_net_amount,
        line_amount(items.unit_gross_price, items.quantity) as line_gross_amount,
        line_amount(items.unit_gross_price - items.unit_net_price, items.quantity)
            as line_tax_amount,
        receipts.transaction_type,
        receipts.payment_group_name,
        receipts.receipted_at_local,
        is_revenue_effective(receipts.payment_group_name, receipts.transaction_type)
            as is_revenue_effective

    from items
    inner join receipts
        on items.location_id = receipts.location_id
        and items.transaction_id = receipts.transaction_id

)

select * from final
