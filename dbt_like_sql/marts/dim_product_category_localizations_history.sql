with

localizations as (

    select * from stg_pos__product_category_localizations

),

final as (

    select * from localizations

)

select * from final
