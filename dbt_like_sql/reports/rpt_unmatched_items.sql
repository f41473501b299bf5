-- latest catalog snapshot (voucher sales, deleted or renumbered articles)
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
        items.product_nr,
        items.product_name,
        items.category_external_id,
        items.quantity,
        items.line_net_amount,
        items.is_revenue_effective

    from items
    inner join catalog_locations
        on items.location_id = catalog_locations.location_id
    left join products
        on items.location_id = products.location_id
        -- numbers compare as numbers: an item's number 123 is the product number '0123'
        and try_cast(items.product_nr as integer) = try_cast(products.product_nr as integer)
    where products.product_id is null and not is_cash_record(items.transaction_type)

)

select * from final
