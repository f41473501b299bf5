with

receipts as (

    select * from stg_pos__receipts

),

items as (

    select * from stg_pos__receipt_items

),

payments as (

    select * from stg_pos__payments

),

item_totals as (

    select
        location_id,
        transaction_id,
        count(*) as item_line_count,
        sum(line_amount(unit_net_price, quantity)) as items_net_amount,
        sum(line_amount(unit_gross_price, quantity)) as items_gross_amount

    from items
    group by all

),

payment_totals as (

    select
        location_id,
        transaction_id,
        count(*) as payment_count,
        sum(amount) as payments_amount

    from payments
    group by all

),

final as (

    select
        -- money exact (DECIMAL(38,8)) and counts BIGINT, as every mart has them
        receipts.* replace (
            exact_amount(receipts.total_amount) as total_amount,
            exact_amount(receipts.tip_amount) as tip_amount,
            exact_amount(receipts.discount_amount) as discount_amount,
            cast(receipts.guest_count as bigint) as guest_count
        ),
        is_revenue_effective(receipts.payment_group_name, receipts.transaction_type)
            as is_revenue_effective,
        is_settlement(receipts.transaction_type) as is_settlement,
        coalesce(item_totals.item_line_count, 0) as item_line_count,
        exact_amount(coalesce(item_totals.items_net_amount, 0)) as items_net_amount,
        exact_amount(coalesce(item_totals.items_gross_amount, 0)) as items_gross_amount,
        coalesce(payment_totals.payment_count, 0) as payment_count,
        exact_amount(coalesce(payment_totals.payments_amount, 0)) as payments_amount

    from receipts
    left join item_totals
        on receipts.location_id = item_totals.location_id
        and receipts.transaction_id = item_totals.transaction_id
    left join payment_totals
        on receipts.location_id = payment_totals.location_id
        and receipts.transaction_id = payment_totals.transaction_id

)

select * from final
