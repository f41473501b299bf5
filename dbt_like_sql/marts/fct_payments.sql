with

payments as (

    select * from stg_pos__payments

),

receipts as (

    select * from stg_pos__receipts

),

final as (

    select
        payments.* replace (exact_amount(payments.amount) as amount),
        receipts.transaction_type,
        receipts.payment_group_name,
        receipts.receipted_at_local

    from payments
    inner join receipts
        on payments.location_id = receipts.location_id
        and payments.transaction_id = receipts.transaction_id

)

select * from final
