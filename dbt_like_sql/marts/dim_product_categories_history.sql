-- grain: one row per location_id, snapshot_date and category_id (every catalog snapshot)
with

categories as (

    select * from stg_pos__product_categories

),

final as (

    select * from categories

)

select * from final
