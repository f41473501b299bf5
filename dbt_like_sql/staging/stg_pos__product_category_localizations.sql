with

source as (

    select * from lake.product_category_localizations

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        category_id,
        locale,
        name as category_name,
        description as category_description,
        image_url as category_image_url

    from source

)

select * from renamed
