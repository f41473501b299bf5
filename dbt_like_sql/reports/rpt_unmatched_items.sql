-- grain: one row per item line whose product number matches no product of its location's
-- latest catalog snapshot (voucher sales, deleted or renumbered articles)
-- materialized: view
with

items as (

    select * from fct_receipt_items

),

products as (

    select * from dim_products

),

catalog_locations as (

    select distinct location_id from products

),

final as (

    select
        items.location_id,
        items.business_date,
        items.transaction_id,
        items.item_key,
        items.transaction_type,
        items.product_number,
        items.product_name,
        items.category_id,
        items.quantity,
        items.line_net_amount,
        items.is_revenue_effective

    from items
    inner join catalog_locations
        on items.location_id = catalog_locations.location_id
    left join products
        on items.location_id = products.location_id
        and items.product_number = products.product_number
    where products.product_id is null

)

select * from final
