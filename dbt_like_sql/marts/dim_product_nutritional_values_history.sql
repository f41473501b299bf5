with

nutritional_values as (

    select * from stg_pos__product_nutritional_values

),

final as (

    select * from nutritional_values

)

select * from final
