with

menus as (

    select * from stg_pos__menus

),

final as (

    select * from menus

)

select * from final
