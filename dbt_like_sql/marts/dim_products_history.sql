with

products as (

    select * from stg_pos__products

),

memberships as (

    select * from stg_pos__product_category_memberships

),

primary_category as (

    select
        location_id,
        snapshot_date,
        product_id,
        category_external_id as primary_category_external_id

    from memberships
    qualify
        row_number() over (
            partition by location_id, snapshot_date, product_id order by position
        ) = 1

),

final as (

    select
        products.* replace (
            exact_amount(products.default_price) as default_price,
            exact_amount(products.reference_price) as reference_price
        ),
        primary_category.primary_category_external_id

    from products
    left join primary_category
        on products.location_id = primary_category.location_id
        and products.snapshot_date = primary_category.snapshot_date
        and products.product_id = primary_category.product_id

)

select * from final
