-- The payments of the day's settlements (every payment group) per payment type and ledger
-- account, in EUR: the payment side of the daily close (rpt_daily_close).
with

payments as (

    select * from fct_payments
    where is_settlement(transaction_type)

),

final as (

    select
        location_id,
        business_date,
        payment_type_name,
        payment_type_nr,
        fibu_account_nr,
        min(payment_type_id) as payment_type_id,
        bool_or(is_voucher_payment(payment_type_name)) as is_voucher_payment,
        count(*) as payment_count,
        count(distinct transaction_id) as settlement_count,
        round_cent(sum(amount)) as payment_amount

    from payments
    group by location_id, business_date, payment_type_name, payment_type_nr, fibu_account_nr

)

select * from final
