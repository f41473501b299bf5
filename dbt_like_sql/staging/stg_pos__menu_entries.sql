with

source as (

    select * from lake.menu_entries

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        category_key,
        entry_key,
        node_id as entry_node_id,
        menu_entry_id,
        position as entry_position,
        name as entry_name,
        subtitle,
        description,
        badge,
        image_url,
        price

    from source

)

select * from renamed
