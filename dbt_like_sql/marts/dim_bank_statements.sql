-- Every bank statement once, with the previous statement's closing balance of the same
-- account: a difference is a gap (a statement missing between them, or a bank that
-- restated a balance), which the data test names.
with

statements as (

    select * from stg_bank__statements

),

chained as (

    select
        *,
        lag(closing_balance_amount) over (
            partition by iban order by closing_date, sequence_number, statement_id
        ) as previous_closing_balance_amount,
        lag(statement_id) over (
            partition by iban order by closing_date, sequence_number, statement_id
        ) as previous_statement_id

    from statements

),

final as (

    select
        *,
        cast(
            opening_balance_amount - previous_closing_balance_amount as decimal(18, 2)
        ) as balance_gap_amount

    from chained

)

select * from final
