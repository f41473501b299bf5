with

source as (

    select * from lake.product_category_memberships

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        product_id,
        category_external_id,
        position

    from source

),

deduplicated as (

    select *
    from renamed
    qualify
        row_number() over (
            partition by location_id, snapshot_date, product_id, category_external_id
            order by position
        ) = 1

)

select * from deduplicated
