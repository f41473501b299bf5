with

features as (

    select * from stg_pos__menu_entry_features

),

final as (

    select * from features

)

select * from final
