-- rpt_daily_close as reported: the days of a closed booking period as they were closed
-- (close-period froze them: stg_ledger__closed_daily_close), every other day as the data says now
-- (rpt_daily_close_current). A later load never changes a closed period's rows; what it
-- changed is in rpt_period_changes (and, booked, in rpt_period_corrections).
with

current_rows as (

    select * from rpt_daily_close_current

),

frozen as (

    select * from stg_ledger__closed_daily_close

),

closed_periods as (

    select * from stg_ledger__closed_periods

),

open_rows as (

    select
        current_rows.*,
        cast(null as varchar) as closed_period

    from current_rows
    anti join closed_periods
        on current_rows.business_date
        between closed_periods.first_date and closed_periods.last_date
        and closed_periods.reports_frozen

),

final as (

    select * from open_rows
    union all by name
    select * from frozen

)

select * from final
