with

source as (

    select * from lake.product_ingredients

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        product_id,
        position as ingredient_position,
        name as ingredient_name

    from source

)

select * from renamed
