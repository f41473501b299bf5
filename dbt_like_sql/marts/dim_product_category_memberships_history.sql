with

memberships as (

    select * from stg_pos__product_category_memberships

),

final as (

    select * from memberships

)

select * from final
