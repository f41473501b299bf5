with

items as (

    select * from stg_pos__receipt_items

),

receipts as (

    select * from stg_pos__receipts

),

final as (

    select
        items.* replace (
            exact_amount(items.gross_amount) as gross_amount,
            exact_amount(items.net_amount) as net_amount,
            exact_amount(items.purchase_price) as purchase_price
        ),
        line_amount(items.net_amount, items.quantity) as line_net_amount,
        line_amount(items.gross_amount, items.quantity) as line_gross_amount,
        line_amount(items.gross_amount - items.net_amount, items.quantity) as line_tax_amount,
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
