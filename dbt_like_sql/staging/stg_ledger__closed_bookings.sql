-- Every booking a closed period booked, as it was booked.
with

source as (

    select * from lake.closed_bookings

),

renamed as (

    select
        period,
        cast(location_id as integer) as location_id,
        business_date,
        original_date,
        booking_number,
        document_number,
        debit_account,
        credit_account,
        amount,
        tax_rate_percent,
        tax_amount,
        booking_kind,
        booking_text,
        cost_center

    from source

)

select * from renamed
