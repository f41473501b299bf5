with

side_dishes as (

    select * from stg_pos__item_side_dishes

),

final as (

    select
        -- unit prices, not line totals: a sum over side dishes takes line_*_amount
        side_dishes.* replace (
            exact_amount(side_dishes.unit_gross_price) as unit_gross_price,
            exact_amount(side_dishes.unit_net_price) as unit_net_price
        ),
        line_amount(side_dishes.unit_net_price, side_dishes.quantity) as line_net_amount,
        line_amount(side_dishes.unit_gross_price, side_dishes.quantity) as line_gross_amount

    from side_dishes

)

select * from final
