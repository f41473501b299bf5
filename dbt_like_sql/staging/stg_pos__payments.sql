-- grain: one row per location_id, transaction_id and payment_id
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
        fibu_account_nr

    from source

),

deduplicated as (

    select *
    from renamed
    qualify row_number() over (
        partition by location_id, transaction_id, payment_id
        order by business_date desc
    ) = 1

)

select * from deduplicated
