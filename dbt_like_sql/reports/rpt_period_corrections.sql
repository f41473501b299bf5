-- Correction bookings of closed periods: what each date of a closed period books now
-- (rpt_bookings: its daily closes and the bank's side) minus what was booked for it (its
-- own bookings and the corrections booked in later
-- periods), per location and booking; dated the first day of the first open period.
with

periods as (

    select * from stg_ledger__closed_periods

),

open_period as (

    select max(last_date) + 1 as first_open_date
    from periods

),

booked as (

    select
        location_id,
        original_date,
        debit_account,
        credit_account,
        tax_rate_percent,
        sum(amount) as amount,
        sum(tax_amount) as tax_amount,
        min(booking_text) as booking_text

    from stg_ledger__closed_bookings
    group by location_id, original_date, debit_account, credit_account, tax_rate_percent

),

current_bookings as (

    select
        bookings.location_id,
        bookings.business_date as original_date,
        bookings.debit_account,
        bookings.credit_account,
        bookings.tax_rate_percent,
        sum(bookings.amount) as amount,
        sum(bookings.tax_amount) as tax_amount,
        min(bookings.booking_text) as booking_text

    from rpt_bookings as bookings
    inner join periods
        on bookings.business_date between periods.first_date and periods.last_date
    group by
        bookings.location_id,
        bookings.business_date,
        bookings.debit_account,
        bookings.credit_account,
        bookings.tax_rate_percent

),

differences as (

    select
        coalesce(now_.location_id, was.location_id) as location_id,
        coalesce(now_.original_date, was.original_date) as original_date,
        coalesce(now_.debit_account, was.debit_account) as debit_account,
        coalesce(now_.credit_account, was.credit_account) as credit_account,
        coalesce(now_.tax_rate_percent, was.tax_rate_percent) as tax_rate_percent,
        coalesce(now_.amount, 0) - coalesce(was.amount, 0) as amount,
        coalesce(now_.tax_amount, 0) - coalesce(was.tax_amount, 0) as tax_amount,
        coalesce(now_.booking_text, was.booking_text) as booking_text

    from current_bookings as now_
    full outer join booked as was
        on now_.location_id = was.location_id
        and now_.original_date = was.original_date
        and now_.debit_account = was.debit_account
        and now_.credit_account = was.credit_account
        and now_.tax_rate_percent is not distinct from was.tax_rate_percent

),

final as (

    select
        differences.location_id,
        differences.original_date,
        periods.period as closed_period,
        open_period.first_open_date as booking_date,
        differences.debit_account,
        differences.credit_account,
        differences.tax_rate_percent,
        cast(differences.amount as decimal(18, 2)) as amount,
        cast(
            case when differences.tax_rate_percent is not null then differences.tax_amount end
            as decimal(18, 2)
        ) as tax_amount,
        differences.booking_text

    from differences
    inner join periods
        on differences.original_date between periods.first_date and periods.last_date
    cross join open_period
    where differences.amount <> 0

)

select * from final
