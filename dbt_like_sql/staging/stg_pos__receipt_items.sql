with

source as (

    select * from lake.receipt_items

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(business_date as date) as business_date,
        transaction_id,
        item_key,
        line_number,
        item_id,
        unique_id,
        external_id,
        nullif(cast(product_number as varchar), '0') as product_nr,
        name as product_name,
        book_date_local as booked_at_local,
        gross_amount as unit_gross_price,
        net_amount as unit_net_price,
        purchase_price,
        quantity,
        course,
        tax_id,
        tax_rate_percent,
        tax_name,
        category_id as category_external_id,
        category_number,
        category_name,
        extra_fields

    from source

)

-- Only the current version of each receipt is in the lake's view (a version another
-- partition took over is left out: pipeline.warehouse.lakeviews).
select * from renamed
