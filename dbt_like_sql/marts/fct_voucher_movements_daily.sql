-- grain: one row per movement_date (UTC) and category_id: vouchers issued, redeemed, topped up
with

transactions as (

    select * from stg_pos__voucher_transactions

),

vouchers as (

    select * from dim_vouchers

),

final as (

    select
        cast(transactions.created_at at time zone 'UTC' as date) as movement_date,
        vouchers.category_id,
        any_value(vouchers.category_name) as category_name,
        count(*) filter (where transactions.transaction_type = 'Issue') as issued_count,
        coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'Issue'), 0) as issued_cents,
        count(*) filter (where transactions.transaction_type = 'Redemption')
            as redemption_count,
        coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'Redemption'), 0) as redeemed_cents,
        count(*) filter (where transactions.transaction_type = 'TopUp') as top_up_count,
        coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'TopUp'), 0) as topped_up_cents

    from transactions
    inner join vouchers
        on transactions.voucher_id = vouchers.voucher_id
    group by all

)

select * from final
