-- grain: one row per location_id, transaction_id and item_key (uniqueId, else item id)
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
        product_number,
        name as product_name,
        book_date_local as booked_at_local,
        gross_amount,
        net_amount,
        purchase_price,
        quantity,
        course,
        tax_id,
        tax_rate_percent,
        tax_name,
        category_id,
        category_number,
        category_name

    from source

),

deduplicated as (

    select *
    from renamed
    qualify row_number() over (
        partition by location_id, transaction_id, item_key
        order by business_date desc
    ) = 1

)

select * from deduplicated
