-- What each exported booking file booked per location and account.
with

source as (

    select * from lake.exported_totals

),

renamed as (

    select
        export_id,
        period,
        cast(location_id as integer) as location_id,
        account,
        debit_amount,
        credit_amount

    from source

)

select * from renamed
