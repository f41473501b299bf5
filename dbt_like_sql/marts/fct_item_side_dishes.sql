with

side_dishes as (

    select * from stg_pos__item_side_dishes

),

final as (

    select
        side_dishes.* replace (
            exact_amount(side_dishes.gross_amount) as gross_amount,
            exact_amount(side_dishes.net_amount) as net_amount
        ),
        line_amount(side_dishes.net_amount, side_dishes.quantity) as line_net_amount,
        line_amount(side_dishes.gross_amount, side_dishes.quantity) as line_gross_amount

    from side_dishes

)

select * from final
