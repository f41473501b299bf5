with

hours as (

    select * from stg_pos__menu_hours

),

final as (

    select * from hours

)

select * from final
