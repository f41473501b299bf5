with

source as (

    select * from lake.payments

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(business_date as date) as business_date,
        transaction_id,
        payment_id,
        amount,
        payment_type_id,
        payment_type_nr,
        payment_type_name,
        fibu_account_nr,
        extra_fields

    from source

),

current_receipts as (

    select location_id, business_date, transaction_id from stg_pos__receipts

),

-- Only the lines of the receipt's current version, on its own business date: an older
-- version left in another day's partition contributes nothing. (Within a partition the
-- extraction has already dropped repeats.)
current_version as (

    select *
    from renamed
    semi join current_receipts using (location_id, business_date, transaction_id)

)

select * from current_version
