-- Each settlement's payments per payment type and POS account, in EUR, with the account
-- the bookings debit them to (payment_account: the config's, else the POS's
-- fibuAccountNr where it fits the chart) and net of the single-purpose vouchers they
-- redeem (revenue at their sale, so no money the daily close books). The daily close's
-- payment bookings (rpt_daily_close_bookings) are its sums per day, type and account;
-- the booking trail (rpt_booking_receipts) names each receipt's share with it.
with

payments as (

    select * from fct_payments
    where is_settlement(transaction_type)

),

redeemed as (

    -- per account the redeeming payments posted to: a payment type that posts to two
    -- accounts has each redemption taken off its own account only
    select
        location_id,
        business_date,
        transaction_id,
        payment_type_name,
        fibu_account_nr,
        sum(redeemed_amount) as redeemed_amount

    from fct_prepaid_vouchers
    where payment_type_name is not null
    group by location_id, business_date, transaction_id, payment_type_name, fibu_account_nr

),

typed as (

    select
        location_id,
        business_date,
        transaction_id,
        payment_type_name,
        fibu_account_nr,
        min(payment_type_id) as payment_type_id,
        sum(amount) as payment_amount

    from payments
    group by location_id, business_date, transaction_id, payment_type_name, fibu_account_nr

),

final as (

    select
        typed.location_id,
        typed.business_date,
        typed.transaction_id,
        typed.payment_type_name,
        typed.fibu_account_nr,
        typed.payment_type_id,
        payment_account(typed.payment_type_id, typed.payment_type_name, typed.fibu_account_nr)
            as debit_account,
        cast(typed.payment_amount as decimal(18, 2)) as payment_amount,
        cast(coalesce(redeemed.redeemed_amount, 0) as decimal(18, 2))
            as prepaid_redeemed_amount,
        cast(typed.payment_amount - coalesce(redeemed.redeemed_amount, 0) as decimal(18, 2))
            as amount

    from typed
    left join redeemed
        on typed.location_id = redeemed.location_id
        and typed.business_date = redeemed.business_date
        and typed.transaction_id = redeemed.transaction_id
        and typed.payment_type_name = redeemed.payment_type_name
        and typed.fibu_account_nr is not distinct from redeemed.fibu_account_nr

)

select * from final
