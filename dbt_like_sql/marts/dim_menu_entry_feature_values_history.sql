with

feature_values as (

    select * from stg_pos__menu_entry_feature_values

),

final as (

    select * from feature_values

)

select * from final
