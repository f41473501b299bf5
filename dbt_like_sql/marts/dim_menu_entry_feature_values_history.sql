with

feature_values as (

    select * from stg_pos__menu_entry_feature_values

),

-- A price as sent, exact: DECIMAL(38,8) as every exact amount of the marts.
final as (

    select * replace (exact_amount(price_adjustment) as price_adjustment)
    from feature_values

)

select * from final
