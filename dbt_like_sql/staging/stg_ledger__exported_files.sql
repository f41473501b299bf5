-- Every booking file an export wrote (pos-etl export --format datev|bmd, close-period).
with

source as (

    select * from lake.exported_files

),

renamed as (

    select
        export_id,
        exported_at,
        format,
        period,
        file_name,
        sha256,
        bookings,
        is_closed_period

    from source

)

select * from renamed
