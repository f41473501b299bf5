with

source as (

    select * from lake.product_categories

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        category_id,
        external_id as category_external_id,
        name as category_name,
        coalesce(nullif(external_name, ''), name) as external_name,
        cashbox_id,
        supplier_id,
        tax_rate_id,
        vat_percent

    from source

),

deduplicated as (

    select *
    from renamed
    qualify
        row_number() over (
            partition by location_id, snapshot_date, category_id order by category_external_id
        ) = 1

)

select * from deduplicated
