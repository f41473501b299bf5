-- Every bank entry once, with the location its account belongs to, the acquirer that paid
-- or took it (a configured acquirer whose name is part of the counterparty's: the longest,
-- should two be), and whether it is a cash deposit (ISO's code for one, or a purpose that
-- starts with one of [bank] deposit_texts; money in, no acquirer's). The reconciliation
-- and the bank's bookings read them from here.
with

entries as (

    select * from stg_bank__entries

),

statements as (

    select * from stg_bank__statements

),

acquirers as (

    select distinct
        acquirer_name,
        counterparty_pattern

    from dim_bank_acquirers

),

payers as (

    select
        entries.iban,
        entries.statement_id,
        entries.entry_number,
        -- the longest pattern that matches; of equally long ones the lowest name
        arg_min(
            acquirers.acquirer_name,
            (-length(acquirers.counterparty_pattern), acquirers.acquirer_name)
        ) as acquirer_name

    from entries
    inner join acquirers
        on entries.counterparty_name ilike '%' || acquirers.counterparty_pattern || '%'
    group by all

),

final as (

    select
        entries.*,
        statements.location_id,
        payers.acquirer_name,
        payers.acquirer_name is null
        and entries.amount > 0
        and is_cash_deposit(entries.transaction_code, entries.remittance) as is_cash_deposit

    from entries
    inner join statements using (iban, statement_id)
    left join payers
        on
        entries.iban = payers.iban
        and entries.statement_id = payers.statement_id
        and entries.entry_number = payers.entry_number

)

select * from final
