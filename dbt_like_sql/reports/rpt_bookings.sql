-- Every booking the DATEV and BMD files book, by location and the date booked: the daily
-- closes (documents Z) and the bank's side (documents B and G, [bank] book). What a file
-- of a period holds, and what a closed period's corrections compare with what was booked.
with

daily_close as (

    select
        location_id,
        business_date,
        document_number,
        booking_number,
        debit_account,
        debit_role,
        credit_account,
        credit_role,
        amount,
        tax_rate_percent,
        tax_amount,
        booking_kind,
        booking_text,
        pos_accounts,
        cast(null as varchar) as bank_entry,
        cast(null as varchar) as transaction_id

    from rpt_daily_close_bookings

),

bank as (

    select
        location_id,
        business_date,
        document_number,
        booking_number,
        debit_account,
        debit_role,
        credit_account,
        credit_role,
        amount,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        booking_kind,
        booking_text,
        cast(null as varchar) as pos_accounts,
        bank_entry,
        transaction_id

    from rpt_bank_bookings

),

final as (

    select * from daily_close
    union all
    select * from bank

)

select * from final
