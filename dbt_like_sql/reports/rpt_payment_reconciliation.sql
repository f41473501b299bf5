-- grain: one row per location_id, business_date, payment_type_name and fibu_account_nr
-- materialized: partitioned
-- Payments of settlements against the settled receipts' totalAmount, per day; a day whose
-- payments and receipt totals differ by more than a cent is flagged on every one of its rows.
with

receipts as (

    select * from fct_receipts

),

payments as (

    select * from fct_payments

),

settled as (

    select *
    from receipts
    where is_settlement

),

day_totals as (

    select
        location_id,
        business_date,
        count(*) as settled_receipt_count,
        sum(total_amount) as settled_total_amount,
        sum(payments_amount) as settled_payments_amount,
        count(*) filter (where abs(total_amount - payments_amount) > 0.01)
            as unbalanced_receipt_count

    from settled
    group by location_id, business_date

),

by_type as (

    select
        payments.location_id,
        payments.business_date,
        payments.payment_type_id,
        payments.payment_type_nr,
        payments.payment_type_name,
        payments.fibu_account_nr,
        count(*) as payment_count,
        sum(payments.amount) as payment_amount

    from payments
    inner join settled
        on payments.location_id = settled.location_id
        and payments.transaction_id = settled.transaction_id
    group by all

),

final as (

    select
        day_totals.location_id,
        day_totals.business_date,
        by_type.payment_type_id,
        by_type.payment_type_nr,
        by_type.payment_type_name,
        by_type.fibu_account_nr,
        coalesce(by_type.payment_count, 0) as payment_count,
        coalesce(by_type.payment_amount, 0) as payment_amount,
        day_totals.settled_receipt_count,
        day_totals.settled_total_amount,
        day_totals.settled_payments_amount,
        day_totals.settled_payments_amount - day_totals.settled_total_amount
            as day_difference_amount,
        day_totals.unbalanced_receipt_count,
        abs(day_totals.settled_payments_amount - day_totals.settled_total_amount) > 0.01
            or day_totals.unbalanced_receipt_count > 0 as has_difference

    from day_totals
    left join by_type
        on day_totals.location_id = by_type.location_id
        and day_totals.business_date = by_type.business_date

)

select * from final
