with

source as (

    select * from lake.voucher_transactions

),

renamed as (

    select
        cast(snapshot_date as date) as snapshot_date,
        voucher_id,
        transaction_id,
        transaction_type,
        amount_cents,
        created_at,
        client_reference

    from source

),

deduplicated as (

    select *
    from renamed
    qualify row_number() over (partition by transaction_id order by snapshot_date desc) = 1

)

select * from deduplicated
