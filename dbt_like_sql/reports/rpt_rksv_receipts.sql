-- The legal fiscal receipts of the Austrian RKSV per location and month: the Monatsbeleg
-- every month ends with and the Jahresbeleg (December's, checked by 15 February). A till
-- that closes after midnight makes them on the next month's first business date, so a
-- receipt of a month's first day counts for the month before. The revenue report names
-- no register, so a location is one register here.
with

receipts as (

    select
        location_id,
        business_date,
        transaction_type

    from fct_receipts

),

days as (

    select
        location_id,
        business_date,
        count(*) filter (where transaction_type = 'Monatsbeleg') as monthly_receipts,
        count(*) filter (where transaction_type = 'JahresBeleg') as annual_receipts

    from receipts
    group by location_id, business_date

),

newest as (

    select
        location_id,
        max(business_date) as newest_date

    from days
    group by location_id

),

loaded_months as (

    select distinct
        location_id,
        cast(date_trunc('month', business_date) as date) as month_start

    from days

),

attributed as (

    select
        location_id,
        monthly_receipts,
        annual_receipts,
        case when day(business_date) = 1 then business_date - 1 else business_date end
            as closed_date

    from days

),

made as (

    select
        location_id,
        cast(date_trunc('month', closed_date) as date) as month_start,
        cast(sum(monthly_receipts) as bigint) as monthly_receipts,
        cast(sum(annual_receipts) as bigint) as annual_receipts

    from attributed
    group by location_id, cast(date_trunc('month', closed_date) as date)

),

final as (

    select
        loaded_months.location_id,
        loaded_months.month_start,
        last_day(loaded_months.month_start) as month_end,
        exists (
            select 1 from days
            where
                days.location_id = loaded_months.location_id
                and days.business_date = last_day(loaded_months.month_start)
        ) and exists (
            select 1 from days
            where
                days.location_id = loaded_months.location_id
                and days.business_date = last_day(loaded_months.month_start) + 1
        ) as is_month_end_loaded,
        month(loaded_months.month_start) = 12 as is_year_end,
        newest.newest_date
        >= make_date(year(loaded_months.month_start) + 1, 2, 15) as is_annual_receipt_due,
        coalesce(made.monthly_receipts, 0) as monthly_receipts,
        coalesce(made.annual_receipts, 0) as annual_receipts

    from loaded_months
    inner join newest on loaded_months.location_id = newest.location_id
    left join made
        on loaded_months.location_id = made.location_id
        and loaded_months.month_start = made.month_start

)

select * from final
