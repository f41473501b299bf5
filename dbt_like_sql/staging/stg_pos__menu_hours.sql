with

source as (

    select * from lake.menu_hours

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        owner_level,
        owner_key,
        kind as hours_kind,
        position,
        days_mask,
        weekdays,
        start_date,
        end_date,
        start_time,
        end_time,
        is_exclude

    from source

)

select * from renamed
