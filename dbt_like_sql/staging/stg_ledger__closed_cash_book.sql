-- The rows of rpt_cash_book of a closed period's days as they were closed (the cash book
-- as close-period found them): what rpt_cash_book shows of a closed period.
with

source as (

    select * from lake.closed_cash_book

),

renamed as (

    select
        period as closed_period,
        cast(location_id as integer) as location_id,
        business_date,
        corrects_date,
        opening_cash,
        cash_takings,
        cash_deposits,
        cash_withdrawals,
        counted_cash,
        cash_difference,
        closing_cash,
        lowest_cash,
        terminal_cut_amount,
        cash_counts

    from source

)

select * from renamed
