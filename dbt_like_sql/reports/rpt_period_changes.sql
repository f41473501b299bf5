-- What changed of a closed booking period's days since it was closed, report by report:
-- per location, business date (and tax rate) and measure, the amount as closed
-- (rpt_vat_by_rate, rpt_daily_close, rpt_cash_book show it) and as the data says now
-- (their _current models), in EUR. The reports of a closed period never change; these are
-- the changes an advisor carries into the first open period (the bookings' own
-- corrections are rpt_period_corrections, which that period's file books). A date loaded
-- after its period was closed shows here with nothing as closed.
with

closed_periods as (

    -- those closed with their reports' rows (a close by an older pos-etl has none)
    select * from stg_ledger__closed_periods
    where reports_frozen

),

vat_frozen as (

    select * from stg_ledger__closed_vat_by_rate

),

vat_now as (

    select
        rpt_vat_by_rate_current.*,
        closed_periods.period as closed_period

    from rpt_vat_by_rate_current
    inner join closed_periods
        on rpt_vat_by_rate_current.business_date
        between closed_periods.first_date and closed_periods.last_date

),

close_frozen as (

    select * from stg_ledger__closed_daily_close

),

close_now as (

    select
        rpt_daily_close_current.*,
        closed_periods.period as closed_period

    from rpt_daily_close_current
    inner join closed_periods
        on rpt_daily_close_current.business_date
        between closed_periods.first_date and closed_periods.last_date

),

cash_frozen as (

    select * from stg_ledger__closed_cash_book

),

cash_now as (

    select
        rpt_cash_book_current.*,
        closed_periods.period as closed_period

    from rpt_cash_book_current
    inner join closed_periods
        on rpt_cash_book_current.business_date
        between closed_periods.first_date and closed_periods.last_date

),

booked as (

    select
        'rpt_vat_by_rate' as report,
        closed_period,
        location_id,
        business_date,
        tax_rate_percent,
        'gross_after_discount' as measure,
        gross_after_discount as amount
    from vat_frozen
    union all
    select
        'rpt_vat_by_rate' as report,
        closed_period,
        location_id,
        business_date,
        tax_rate_percent,
        'net_after_discount' as measure,
        net_after_discount as amount
    from vat_frozen
    union all
    select
        'rpt_vat_by_rate' as report,
        closed_period,
        location_id,
        business_date,
        tax_rate_percent,
        'vat_after_discount' as measure,
        vat_after_discount as amount
    from vat_frozen
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'revenue_amount' as measure,
        revenue_amount as amount
    from close_frozen
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'tip_amount' as measure,
        tip_amount as amount
    from close_frozen
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'pass_through_amount' as measure,
        pass_through_amount as amount
    from close_frozen
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'non_revenue_amount' as measure,
        non_revenue_amount as amount
    from close_frozen
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'payment_amount' as measure,
        payment_amount as amount
    from close_frozen
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'difference_amount' as measure,
        difference_amount as amount
    from close_frozen
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_takings' as measure,
        cash_takings as amount
    from cash_frozen
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_deposits' as measure,
        cash_deposits as amount
    from cash_frozen
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_withdrawals' as measure,
        cash_withdrawals as amount
    from cash_frozen
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'counted_cash' as measure,
        counted_cash as amount
    from cash_frozen
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_difference' as measure,
        cash_difference as amount
    from cash_frozen
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'closing_cash' as measure,
        closing_cash as amount
    from cash_frozen

),

now as (

    select
        'rpt_vat_by_rate' as report,
        closed_period,
        location_id,
        business_date,
        tax_rate_percent,
        'gross_after_discount' as measure,
        gross_after_discount as amount
    from vat_now
    union all
    select
        'rpt_vat_by_rate' as report,
        closed_period,
        location_id,
        business_date,
        tax_rate_percent,
        'net_after_discount' as measure,
        net_after_discount as amount
    from vat_now
    union all
    select
        'rpt_vat_by_rate' as report,
        closed_period,
        location_id,
        business_date,
        tax_rate_percent,
        'vat_after_discount' as measure,
        vat_after_discount as amount
    from vat_now
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'revenue_amount' as measure,
        revenue_amount as amount
    from close_now
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'tip_amount' as measure,
        tip_amount as amount
    from close_now
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'pass_through_amount' as measure,
        pass_through_amount as amount
    from close_now
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'non_revenue_amount' as measure,
        non_revenue_amount as amount
    from close_now
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'payment_amount' as measure,
        payment_amount as amount
    from close_now
    union all
    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'difference_amount' as measure,
        difference_amount as amount
    from close_now
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_takings' as measure,
        cash_takings as amount
    from cash_now
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_deposits' as measure,
        cash_deposits as amount
    from cash_now
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_withdrawals' as measure,
        cash_withdrawals as amount
    from cash_now
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'counted_cash' as measure,
        counted_cash as amount
    from cash_now
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'cash_difference' as measure,
        cash_difference as amount
    from cash_now
    union all
    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        'closing_cash' as measure,
        closing_cash as amount
    from cash_now

),

final as (

    select
        coalesce(booked.report, now.report) as report,
        coalesce(booked.closed_period, now.closed_period) as closed_period,
        coalesce(booked.location_id, now.location_id) as location_id,
        coalesce(booked.business_date, now.business_date) as business_date,
        coalesce(booked.tax_rate_percent, now.tax_rate_percent) as tax_rate_percent,
        coalesce(booked.measure, now.measure) as measure,
        cast(booked.amount as decimal(18, 2)) as booked_amount,
        cast(now.amount as decimal(18, 2)) as current_amount,
        cast(coalesce(now.amount, 0) - coalesce(booked.amount, 0) as decimal(18, 2))
            as change_amount

    from booked
    full outer join now
        on booked.report = now.report
        and booked.closed_period = now.closed_period
        and booked.location_id = now.location_id
        and booked.business_date = now.business_date
        and booked.tax_rate_percent is not distinct from now.tax_rate_percent
        and booked.measure = now.measure
    where booked.amount is distinct from now.amount

)

select * from final
