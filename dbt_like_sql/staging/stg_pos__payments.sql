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

)

-- Only the current version of each receipt is in the lake's view (a version another
-- partition took over is left out: pipeline.warehouse.lakeviews).
select * from renamed
