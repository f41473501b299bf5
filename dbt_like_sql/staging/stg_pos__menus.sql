with

source as (

    select * from lake.menus

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        menu_key,
        node_id as menu_node_id,
        position as menu_position,
        name as menu_name,
        description as menu_description,
        image_url as menu_image_url,
        price_name,
        badge as menu_badge

    from source

)

select * from renamed
