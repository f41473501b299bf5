-- One row per configured location and business date it should have: from its first
-- business date to the newest date due when the warehouse was built (its time zone,
-- business-day start and the freshness deadline), or to its last business date. A date is
-- loaded when its revenue partition is committed in the lake, loaded_empty when that
-- partition has no receipts (a closed day is data, not a hole), provisional when it was
-- loaded before the day was over (it counts as missing for a close or a booking file
-- until it is loaded again), else missing. A date loaded before it was due has a row
-- too. pos-etl status, close-period and the exports say the same
-- (pipeline.warehouse.coverage).
with

locations as (

    select * from configured_locations()

),

clock as (

    select
        *,
        timezone(timezone, get_current_timestamp()) as local_now
    from locations

),

deadline as (

    select
        *,
        case
            when cast(local_now as time) >= due_at
                then cast(local_now as date) + due_at
            else cast(local_now as date) - 1 + due_at
        end as deadline_passed
    from clock

),

due as (

    select
        *,
        case
            when cast(deadline_passed as time) >= business_day_starts
                then cast(deadline_passed as date)
            else cast(deadline_passed as date) - 1
        end - 1 as due_date
    from deadline

),

spans as (

    select
        location_id,
        short_code,
        first_business_date,
        due_date,
        least(coalesce(last_business_date, due_date), due_date) as last_date
    from due

),

days as (

    select
        location_id,
        short_code,
        due_date,
        unnest(range(
            cast(first_business_date as timestamp),
            cast(last_date + 1 as timestamp),
            interval 1 day
        )) as day_start
    from spans

),

loads as (

    select * from lake.revenue_loads

),

-- the dates due, and those loaded before they were due (a day over but not due yet, or
-- the day under way: provisional)
expected as (

    select
        location_id,
        short_code,
        due_date,
        cast(day_start as date) as business_date
    from days

    union all

    select
        spans.location_id,
        spans.short_code,
        spans.due_date,
        loads.business_date
    from loads
    inner join spans
        on loads.location_id = spans.location_id
        and loads.business_date > spans.last_date

),

drift as (

    select
        location_id,
        business_date,
        max(detected_at) as last_drift_detected_at,
        count(*) as drift_count
    from stg_pos__source_drift
    group by location_id, business_date

),

final as (

    select
        expected.location_id,
        expected.short_code,
        expected.business_date,
        loads.receipts,
        loads.load_id,
        loads.loaded_at,
        drift.last_drift_detected_at,
        expected.due_date as expected_through,
        case
            when loads.load_id is null then 'missing'
            when loads.provisional then 'provisional'
            when loads.receipts = 0 then 'loaded_empty'
            else 'loaded'
        end as coverage_status,
        coalesce(drift.drift_count, 0) as drift_count,
        get_current_timestamp() as checked_at

    from expected
    left join loads
        on expected.location_id = loads.location_id
        and expected.business_date = loads.business_date
    left join drift
        on expected.location_id = drift.location_id
        and expected.business_date = drift.business_date

)

select * from final
