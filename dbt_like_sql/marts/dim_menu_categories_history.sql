with

categories as (

    select * from stg_pos__menu_categories

),

final as (

    select * from categories

)

select * from final
