-- The cash book (Kassenbuch) per location and business date, carried from day to day. A
-- count (Bargeldzählung) sets the cash to what was counted; its difference is the count
-- minus what the book said just before it. Until a location's first count the cash is
-- not known (no opening balance is configured), so that count shows no difference; the
-- same after business dates the lake lacks (the book breaks there: a chain ends). A
-- business date loaded before it was over (provisional) is not in the cash book: it is
-- lacking until it is loaded again.
with

loads as (

    select * from lake.revenue_loads
    where not provisional

),

provisional_days as (

    select
        location_id,
        business_date
    from lake.revenue_loads
    where provisional

),

cash_movements as (

    select cash.*
    from fct_cash_movements as cash
    anti join provisional_days
        on cash.location_id = provisional_days.location_id
        and cash.business_date = provisional_days.business_date

),

movements as (

    select * from cash_movements
    where movement_kind <> 'terminal_cut'

),

record_days as (

    select
        location_id,
        business_date,
        lag(business_date) over (
            partition by location_id order by business_date
        ) as previous_date

    from (
        select distinct
            location_id,
            business_date
        from movements
    ) as record_dates

),

-- each location's loaded business dates, numbered in order
loaded_days as (

    select
        location_id,
        business_date,
        row_number() over (
            partition by location_id order by business_date
        ) as day_number

    from (
        select distinct
            location_id,
            business_date
        from loads
    ) as loaded

),

-- a day whose book follows from the one before it: every date between them is loaded
-- (the loaded dates before the day, less those up to the day before: a join as of each
-- date, not a count per day over the history)
day_breaks as (

    select
        record_days.location_id,
        record_days.business_date,
        record_days.previous_date is null
        or coalesce(before_day.day_number, 0) - coalesce(previous_day.day_number, 0)
        < record_days.business_date - record_days.previous_date - 1 as is_break

    from record_days
    asof left join loaded_days as before_day
        on record_days.location_id = before_day.location_id
        and record_days.business_date > before_day.business_date
    asof left join loaded_days as previous_day
        on record_days.location_id = previous_day.location_id
        and record_days.previous_date >= previous_day.business_date

),

chained_days as (

    select
        location_id,
        business_date,
        sum(case when is_break then 1 else 0 end) over (
            partition by location_id order by business_date
        ) as book_chain

    from day_breaks

),

entries as (

    select
        movements.*,
        chained_days.book_chain

    from movements
    inner join chained_days
        on movements.location_id = chained_days.location_id
        and movements.business_date = chained_days.business_date

),

terminal_cuts as (

    select
        location_id,
        business_date,
        sum(amount) as terminal_cut_amount

    from cash_movements
    where movement_kind = 'terminal_cut'
    group by all

),

-- each entry with the number of counts before it in the location's history: its stretch
numbered as (

    select
        *,
        coalesce(sum(case when movement_kind = 'count' then 1 else 0 end) over (
            partition by location_id, book_chain order by business_date, entry_number
            rows between unbounded preceding and 1 preceding
        ), 0) as stretch,
        last_value(case when movement_kind = 'count' then amount end ignore nulls) over (
            partition by location_id, book_chain order by business_date, entry_number
            rows between unbounded preceding and 1 preceding
        ) as last_counted

    from entries

),

balanced as (

    select
        *,
        last_counted + sum(case when movement_kind = 'count' then 0 else amount end) over (
            partition by location_id, book_chain, stretch order by business_date, entry_number
            rows between unbounded preceding and current row
        ) as book_cash

    from numbered

),

entry_cash as (

    select
        *,
        case when movement_kind = 'count' then amount else book_cash end as cash_after,
        case when movement_kind = 'count' then amount - book_cash end as count_difference

    from balanced

),

days as (

    select
        location_id,
        business_date,
        min(book_chain) as book_chain,
        coalesce(sum(amount) filter (where movement_kind = 'takings'), 0) as cash_takings,
        coalesce(sum(amount) filter (where movement_kind = 'deposit'), 0) as cash_deposits,
        coalesce(sum(amount) filter (where movement_kind = 'withdrawal'), 0)
            as cash_withdrawals,
        count(*) filter (where movement_kind = 'count') as count_count,
        arg_max(amount, entry_number) filter (where movement_kind = 'count')
            as counted_cash,
        sum(count_difference) as cash_difference,
        count(*) filter (where movement_kind = 'count' and count_difference is null)
            as unknown_count_count,
        arg_max(cash_after, entry_number) as closing_cash,
        min(cash_after) as lowest_cash

    from entry_cash
    group by location_id, business_date

),

final as (

    select
        days.location_id,
        days.business_date,
        round_cent(lag(days.closing_cash) over (
            partition by days.location_id, days.book_chain order by days.business_date
        )) as opening_cash,
        round_cent(days.cash_takings) as cash_takings,
        round_cent(days.cash_deposits) as cash_deposits,
        round_cent(days.cash_withdrawals) as cash_withdrawals,
        round_cent(days.counted_cash) as counted_cash,
        round_cent(
            case when days.unknown_count_count = 0 then days.cash_difference end
        ) as cash_difference,
        round_cent(days.closing_cash) as closing_cash,
        round_cent(days.lowest_cash) as lowest_cash,
        round_cent(coalesce(terminal_cuts.terminal_cut_amount, 0)) as terminal_cut_amount,
        days.count_count as cash_counts

    from days
    left join terminal_cuts
        on days.location_id = terminal_cuts.location_id
        and days.business_date = terminal_cuts.business_date

)

select * from final
