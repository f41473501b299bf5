with

source as (

    select * from lake.source_drift

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(business_date as date) as business_date,
        detected_at,
        receipts_before,
        receipts_after,
        turnover_net_before,
        turnover_net_after,
        replaced_load_id,
        new_load_id

    from source

)

select * from renamed
