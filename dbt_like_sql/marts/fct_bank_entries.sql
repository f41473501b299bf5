with

entries as (

    select * from stg_bank__entries

),

statements as (

    select * from stg_bank__statements

),

final as (

    select
        entries.*,
        statements.location_id

    from entries
    inner join statements using (iban, statement_id)

)

select * from final
