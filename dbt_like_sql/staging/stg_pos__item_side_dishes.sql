with

source as (

    select * from lake.item_side_dishes

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(business_date as date) as business_date,
        transaction_id,
        item_key,
        side_dish_key,
        side_dish_id,
        unique_id,
        nullif(cast(product_number as varchar), '0') as product_nr,
        name as side_dish_name,
        gross_amount as unit_gross_price,
        net_amount as unit_net_price,
        quantity,
        extra_fields

    from source

)

-- Only the current version of each receipt is in the lake's view (a version another
-- partition took over is left out: pipeline.warehouse.lakeviews).
select * from renamed
