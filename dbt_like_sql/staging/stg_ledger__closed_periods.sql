-- The closed booking periods (pos-etl close-period), without their files' bytes.
with

source as (

    select * from lake.closed_periods

),

renamed as (

    select
        period,
        first_date,
        last_date,
        year_start,
        closed_at,
        format,
        file_name,
        sha256,
        bookings,
        load_id

    from source

)

select * from renamed
