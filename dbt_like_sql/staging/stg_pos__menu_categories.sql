with

source as (

    select * from lake.menu_categories

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        menu_key,
        category_key,
        node_id as category_node_id,
        position as category_position,
        name as category_name,
        description as category_description,
        image_url as category_image_url,
        badge as category_badge

    from source

)

select * from renamed
