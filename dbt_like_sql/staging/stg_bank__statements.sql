with

source as (

    select * from lake.bank_statements

),

renamed as (

    select
        iban,
        statement_id,
        cast(location_id as integer) as location_id,
        format as statement_format,
        sequence_number,
        currency as currency_code,
        opening_balance as opening_balance_amount,
        opening_date,
        closing_balance as closing_balance_amount,
        closing_date,
        entry_count,
        file_name,
        file_sha256

    from source

)

select * from renamed
