-- The ledger is tenant-wide (no location); its business date is the local date of each
-- movement in the ledger's time zone ([accounting] ledger_timezone, by default the first
-- location's), through the macro ledger_date. The ledger's whole cents as euros,
-- DECIMAL(18,2).
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
        min(vouchers.voucher_category_name) as voucher_category_name,
        count(*) filter (where transactions.transaction_type = 'Issue') as issued_count,
        from_cent_units(coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'Issue'
        ), 0)) as issued_amount,
        count(*) filter (where transactions.transaction_type = 'Redemption')
            as redemption_count,
        from_cent_units(coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'Redemption'
        ), 0)) as redeemed_amount,
        count(*) filter (where transactions.transaction_type = 'TopUp') as top_up_count,
        from_cent_units(coalesce(sum(transactions.amount_cents) filter (
            where transactions.transaction_type = 'TopUp'
        ), 0)) as topped_up_amount

    from transactions
    inner join vouchers
        on transactions.voucher_id = vouchers.voucher_id
    group by all

)

select * from daily
