-- The money in transit per location, month and kind (card: sold by card, paid out by the
-- acquirers, taken back by a chargeback; cash: moved out of the till, paid in at the
-- bank): what the POS took, the fees, what the bank paid, what is still on its way (not
-- yet due) and what is open, with the oldest open item's age. A month whose money all
-- arrived nets to zero (open_amount 0); rpt_bank_reconciliation says which day is open
-- and why. Its business dates not loaded (rpt_coverage: missing or provisional) are named:
-- their payouts and deposits cannot be matched.
with

reconciliation as (

    select
        *,
        case
            when payment_type_name = 'cash' then 'cash'
            when payment_type_name is not null or reason = 'chargeback' then 'card'
        end as transit_kind

    from rpt_bank_reconciliation
    where reason <> 'not loaded'

),

months as (

    select
        location_id,
        cast(date_trunc('month', business_date) as date) as month_start,
        transit_kind,
        round_cent(sum(pos_amount)) as pos_amount,
        round_cent(sum(coalesce(fee_amount, 0))) as fee_amount,
        round_cent(
            sum(pos_amount - coalesce(fee_amount, 0) - difference_amount)
        ) as paid_amount,
        round_cent(
            coalesce(sum(difference_amount) filter (where reason = 'not yet due'), 0)
        ) as in_transit_amount,
        round_cent(coalesce(sum(difference_amount) filter (
            where is_open and reason <> 'not yet due'
        ), 0)) as open_amount,
        count(*) filter (where is_open and reason <> 'not yet due') as open_item_count,
        max(days_open) filter (
            where is_open and reason <> 'not yet due'
        ) as oldest_open_days

    from reconciliation
    where transit_kind is not null
    group by all

),

gaps as (

    select
        location_id,
        cast(date_trunc('month', business_date) as date) as month_start,
        count(*) as missing_business_date_count,
        string_agg(
            cast(business_date as varchar), ', ' order by business_date
        ) as missing_business_dates

    from rpt_coverage
    where coverage_status in ('missing', 'provisional')
    group by all

),

final as (

    select
        months.*,
        coalesce(gaps.missing_business_date_count, 0) as missing_business_date_count,
        gaps.missing_business_dates

    from months
    left join gaps
        on
        months.location_id = gaps.location_id
        and months.month_start = gaps.month_start

)

select * from final
