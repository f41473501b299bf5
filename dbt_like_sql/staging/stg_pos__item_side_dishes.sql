-- grain: one row per location_id, transaction_id, item_key and side_dish_key
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
        product_number,
        name as side_dish_name,
        gross_amount,
        net_amount,
        quantity

    from source

),

deduplicated as (

    select *
    from renamed
    qualify row_number() over (
        partition by location_id, transaction_id, item_key, side_dish_key
        order by business_date desc
    ) = 1

)

select * from deduplicated
