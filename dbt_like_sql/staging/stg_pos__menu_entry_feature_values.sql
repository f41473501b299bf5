with

source as (

    select * from lake.menu_entry_feature_values

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        feature_key,
        value_key,
        node_id as value_node_id,
        position as value_position,
        name as value_name,
        description as value_description,
        image_url as value_image_url,
        min_amount,
        max_amount,
        free_amount,
        price_adjustment

    from source

)

select * from renamed
