with

source as (

    select * from lake.bank_entries

),

renamed as (

    select
        iban,
        statement_id,
        entry_number,
        booking_date,
        value_date,
        amount,
        currency as currency_code,
        is_booked,
        is_reversal,
        bank_reference,
        end_to_end_id,
        counterparty_name,
        counterparty_iban,
        remittance,
        transaction_code,
        batch_count

    from source

)

select * from renamed
