with

ingredients as (

    select * from stg_pos__product_ingredients

),

final as (

    select * from ingredients

)

select * from final
