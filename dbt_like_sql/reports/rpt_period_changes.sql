-- What changed of a closed booking period's days since it was closed, report by report:
-- per location, business date (and tax rate) and measure, the amount as closed
-- (rpt_vat_by_rate, rpt_daily_close, rpt_cash_book show it) and as the data says now
-- (their _current models), in EUR. The reports of a closed period never change; the first
-- open period carries the changes: the cash book's and VAT report's as correction rows
-- (rpt_cash_book, rpt_vat_by_rate: corrects_date), the bookings' as correction bookings
-- (rpt_period_corrections). A date loaded after its period was closed shows here with
-- nothing as closed.
with

closed_periods as (

    -- those closed with their reports' rows (a close by an older pos-etl has none)
    select * from stg_ledger__closed_periods
    where reports_frozen

),

vat_booked_rows as (

    select
        'rpt_vat_by_rate' as report,
        closed_period,
        location_id,
        business_date,
        tax_rate_percent,
        gross_after_discount,
        net_after_discount,
        vat_after_discount
    from stg_ledger__closed_vat_by_rate
    where corrects_date is null

),

vat_booked as (

    unpivot vat_booked_rows
    on gross_after_discount, net_after_discount, vat_after_discount
    into name measure value amount

),

vat_now_rows as (

    select
        'rpt_vat_by_rate' as report,
        closed_periods.period as closed_period,
        rpt_vat_by_rate_current.location_id,
        rpt_vat_by_rate_current.business_date,
        rpt_vat_by_rate_current.tax_rate_percent,
        rpt_vat_by_rate_current.gross_after_discount,
        rpt_vat_by_rate_current.net_after_discount,
        rpt_vat_by_rate_current.vat_after_discount
    from rpt_vat_by_rate_current
    inner join closed_periods
        on rpt_vat_by_rate_current.business_date
        between closed_periods.first_date and closed_periods.last_date

),

vat_now as (

    unpivot vat_now_rows
    on gross_after_discount, net_after_discount, vat_after_discount
    into name measure value amount

),

close_booked_rows as (

    select
        'rpt_daily_close' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        revenue_amount,
        tip_amount,
        pass_through_amount,
        non_revenue_amount,
        payment_amount,
        difference_amount
    from stg_ledger__closed_daily_close

),

close_booked as (

    unpivot close_booked_rows
    on
    revenue_amount, tip_amount, pass_through_amount, non_revenue_amount,
    payment_amount, difference_amount
    into name measure value amount

),

close_now_rows as (

    select
        'rpt_daily_close' as report,
        closed_periods.period as closed_period,
        rpt_daily_close_current.location_id,
        rpt_daily_close_current.business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        rpt_daily_close_current.revenue_amount,
        rpt_daily_close_current.tip_amount,
        rpt_daily_close_current.pass_through_amount,
        rpt_daily_close_current.non_revenue_amount,
        rpt_daily_close_current.payment_amount,
        rpt_daily_close_current.difference_amount
    from rpt_daily_close_current
    inner join closed_periods
        on rpt_daily_close_current.business_date
        between closed_periods.first_date and closed_periods.last_date

),

close_now as (

    unpivot close_now_rows
    on
    revenue_amount, tip_amount, pass_through_amount, non_revenue_amount,
    payment_amount, difference_amount
    into name measure value amount

),

cash_booked_rows as (

    select
        'rpt_cash_book' as report,
        closed_period,
        location_id,
        business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cash_takings,
        cash_deposits,
        cash_withdrawals,
        counted_cash,
        cash_difference,
        closing_cash
    from stg_ledger__closed_cash_book
    where corrects_date is null

),

cash_booked as (

    unpivot cash_booked_rows
    on cash_takings, cash_deposits, cash_withdrawals, counted_cash, cash_difference, closing_cash
    into name measure value amount

),

cash_now_rows as (

    select
        'rpt_cash_book' as report,
        closed_periods.period as closed_period,
        rpt_cash_book_current.location_id,
        rpt_cash_book_current.business_date,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        rpt_cash_book_current.cash_takings,
        rpt_cash_book_current.cash_deposits,
        rpt_cash_book_current.cash_withdrawals,
        rpt_cash_book_current.counted_cash,
        rpt_cash_book_current.cash_difference,
        rpt_cash_book_current.closing_cash
    from rpt_cash_book_current
    inner join closed_periods
        on rpt_cash_book_current.business_date
        between closed_periods.first_date and closed_periods.last_date

),

cash_now as (

    unpivot cash_now_rows
    on cash_takings, cash_deposits, cash_withdrawals, counted_cash, cash_difference, closing_cash
    into name measure value amount

),

booked as (

    select * from vat_booked
    union all by name
    select * from close_booked
    union all by name
    select * from cash_booked

),

now as (

    select * from vat_now
    union all by name
    select * from close_now
    union all by name
    select * from cash_now

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
