-- grain: one row per location_id and spot_id, from the location's latest catalog snapshot
with

history as (

    select * from dim_spots_history

),

final as (

    select *
    from history
    qualify snapshot_date = max(snapshot_date) over (partition by location_id)

)

select * from final
