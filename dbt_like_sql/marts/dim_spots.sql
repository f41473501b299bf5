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
