-- The closed booking periods (pos-etl close-period); of each file its size, not its bytes
-- (they stay in the lake, where an export of the period reads them).
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
        octet_length(content) as file_bytes,
        bookings,
        incomplete,
        suspense,
        coalesce(reports_frozen, false) as reports_frozen,
        load_id

    from source

)

select * from renamed
