-- rpt_cash_book as reported: the days of a closed booking period as they were closed
-- (close-period froze them: stg_ledger__closed_cash_book), every other day as the data says now
-- (rpt_cash_book_current), and the corrections: what a later load changed of a closed day's
-- takings, deposits and withdrawals, as a row dated the first open period's first day
-- (corrects_date names the day). A Kassendifferenz is the till's: a reload never makes one
-- in a closed period, and a correction row carries none. A correction is frozen with the
-- period that carries it, so it is carried once. rpt_period_changes lists every change.
with

current_rows as (

    select * from rpt_cash_book_current

),

frozen as (

    select * from stg_ledger__closed_cash_book

),

closed_periods as (

    select * from stg_ledger__closed_periods

),

open_period as (

    select max(last_date) + 1 as first_open_date
    from closed_periods

),

open_rows as (

    select
        current_rows.*,
        cast(null as varchar) as closed_period,
        cast(null as date) as corrects_date

    from current_rows
    anti join closed_periods
        on current_rows.business_date
        between closed_periods.first_date and closed_periods.last_date
        and closed_periods.reports_frozen

),

-- a closed day's movements as the books hold them: as closed, plus what later closes
-- carried for it
carried as (

    select
        frozen.location_id,
        coalesce(frozen.corrects_date, frozen.business_date) as original_date,
        sum(frozen.cash_takings) as cash_takings,
        sum(frozen.cash_deposits) as cash_deposits,
        sum(frozen.cash_withdrawals) as cash_withdrawals

    from frozen
    group by all

),

now_closed as (

    select
        current_rows.location_id,
        current_rows.business_date as original_date,
        current_rows.cash_takings,
        current_rows.cash_deposits,
        current_rows.cash_withdrawals

    from current_rows
    semi join closed_periods
        on current_rows.business_date
        between closed_periods.first_date and closed_periods.last_date
        and closed_periods.reports_frozen

),

changes as (

    select
        coalesce(now_closed.location_id, carried.location_id) as location_id,
        coalesce(now_closed.original_date, carried.original_date) as original_date,
        coalesce(now_closed.cash_takings, 0) - coalesce(carried.cash_takings, 0)
            as cash_takings,
        coalesce(now_closed.cash_deposits, 0) - coalesce(carried.cash_deposits, 0)
            as cash_deposits,
        coalesce(now_closed.cash_withdrawals, 0) - coalesce(carried.cash_withdrawals, 0)
            as cash_withdrawals

    from now_closed
    full outer join carried
        on now_closed.location_id = carried.location_id
        and now_closed.original_date = carried.original_date

),

correction_rows as (

    select
        changes.location_id,
        open_period.first_open_date as business_date,
        cast(null as decimal(18, 2)) as opening_cash,
        cast(changes.cash_takings as decimal(18, 2)) as cash_takings,
        cast(changes.cash_deposits as decimal(18, 2)) as cash_deposits,
        cast(changes.cash_withdrawals as decimal(18, 2)) as cash_withdrawals,
        cast(null as decimal(18, 2)) as counted_cash,
        cast(null as decimal(18, 2)) as cash_difference,
        cast(null as decimal(18, 2)) as closing_cash,
        cast(null as decimal(18, 2)) as lowest_cash,
        cast(0 as decimal(18, 2)) as terminal_cut_amount,
        cast(0 as bigint) as cash_counts,
        cast(null as varchar) as closed_period,
        changes.original_date as corrects_date

    from changes
    cross join open_period
    where
        changes.cash_takings <> 0
        or changes.cash_deposits <> 0
        or changes.cash_withdrawals <> 0

),

final as (

    select * from open_rows
    union all by name
    select * from frozen
    union all by name
    select * from correction_rows

)

select * from final
