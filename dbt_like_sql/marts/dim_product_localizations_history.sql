with

localizations as (

    select * from stg_pos__product_localizations

),

final as (

    select * from localizations

)

select * from final
