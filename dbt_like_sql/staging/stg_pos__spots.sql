with

source as (

    select * from lake.spots

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        spot_id,
        external_spot_id,
        number as spot_number,
        name as spot_name,
        alternative_name,
        description,
        qr_code,
        type as spot_type,
        capacity,
        location_location_id as spot_location_id,
        location_short_code,
        area_id,
        area_name,
        area_external_area_id,
        geo_latitude,
        geo_longitude,
        flags_visible_in_app as is_visible_in_app,
        flags_supports_table_order as has_table_order,
        flags_supports_cash_payment as has_cash_payment,
        flags_default_to_take_away as is_take_away_default,
        flags_display_as_button as is_displayed_as_button

    from source

),

deduplicated as (

    select *
    from renamed
    qualify
        row_number() over (
            partition by location_id, snapshot_date, spot_id order by spot_name
        ) = 1

)

select * from deduplicated
