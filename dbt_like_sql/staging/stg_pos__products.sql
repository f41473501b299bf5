with

source as (

    select * from lake.products

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        product_id,
        product_nr,
        nullif(gtin, '') as gtin,
        external_product_id,
        name as product_name,
        coalesce(nullif(external_name, ''), name) as external_name,
        subtitle,
        description,
        pricing_default_price as default_price,
        pricing_reference_price as reference_price,
        pricing_tax_rate_id as tax_rate_id,
        pricing_allow_client_price as is_client_price_allowed,
        cashbox_id,
        cashbox_production_place_id as production_place_id,
        cashbox_parent_product_id as parent_product_id,
        media_image_url as image_url,
        flags_is_visible as is_visible,
        flags_is_locked as is_locked,
        flags_queued_for_review as is_queued_for_review,
        nutrition_amount,
        nutrition_amount_unit,
        nutrition_calories,
        nutrition_allergens as allergen_flags,
        nutrition_minimum_age as minimum_age

    from source

),

deduplicated as (

    select *
    from renamed
    qualify
        row_number() over (
            partition by location_id, snapshot_date, product_id order by product_nr
        ) = 1

)

select * from deduplicated
