-- The ledger is tenant-wide (no location); its business date is the local date of each
-- movement in the ledger's time zone ([accounting] ledger_timezone, by default the first
-- location's), through the macro ledger_date. Amounts in cents and, beside them, in
-- currency units.
with

transactions as (

    select * from stg_pos__voucher_transactions

),

vouchers as (

    select * from dim_vouchers

),

daily as (

    select
        ledger_date(transactions.created_at) as business_date,
        vouchers.voucher_category_id,
        any_value(vouchers.voucher_category_name) as voucher_category_name,
        count(*) filter (where transactions.transaction_type = 'Issue') as issued_count,
        cast(coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'Issue'
        ), 0) as bigint) as issued_cents,
        count(*) filter (where transactions.transaction_type = 'Redemption')
            as redemption_count,
        cast(coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'Redemption'
        ), 0) as bigint) as redeemed_cents,
        count(*) filter (where transactions.transaction_type = 'TopUp') as top_up_count,
        cast(coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'TopUp'
        ), 0) as bigint) as topped_up_cents

    from transactions
    inner join vouchers
        on transactions.voucher_id = vouchers.voucher_id
    group by all

),

final as (

    select
        *,
        from_cent_units(issued_cents) as issued_amount,
        from_cent_units(redeemed_cents) as redeemed_amount,
        from_cent_units(topped_up_cents) as topped_up_amount

    from daily

)

select * from final
