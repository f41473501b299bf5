with

source as (

    select * from lake.menu_entry_features

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        entry_key,
        feature_key,
        node_id as feature_node_id,
        position as feature_position,
        name as feature_name,
        description as feature_description,
        group_name,
        is_deselect_feature,
        max_values_allowed,
        min_values_required,
        values_for_free

    from source

)

select * from renamed
