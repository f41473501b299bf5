-- grain: one row per location_id, snapshot_date and spot_id (every catalog snapshot)
with

spots as (

    select * from stg_pos__spots

),

final as (

    select * from spots

)

select * from final
