with

source as (

    select * from lake.product_localizations

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        product_id,
        locale,
        name as product_name,
        subtitle as product_subtitle,
        description as product_description,
        image_url as product_image_url

    from source

)

select * from renamed
