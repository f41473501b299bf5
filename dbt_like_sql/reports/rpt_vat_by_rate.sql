-- rpt_vat_by_rate as reported: the days of a closed booking period as they were closed
-- (close-period froze them: stg_ledger__closed_vat_by_rate), every other day as the data says
-- now (rpt_vat_by_rate_current), and the corrections: what a later load changed of a closed
-- day, per tax rate, as a row dated the first open period's first day (corrects_date names
-- the day), so the first open period's VAT return carries it. A correction is frozen with
-- the period that carries it, so it is carried once. rpt_period_changes lists every change.
with

current_rows as (

    select * from rpt_vat_by_rate_current

),

frozen as (

    select * from stg_ledger__closed_vat_by_rate

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

-- a closed day's figures as the books hold them: as closed, plus what later closes
-- carried for it
carried as (

    select
        frozen.location_id,
        coalesce(frozen.corrects_date, frozen.business_date) as original_date,
        frozen.tax_rate_percent,
        sum(frozen.revenue_receipt_count) as revenue_receipt_count,
        sum(frozen.item_line_count) as item_line_count,
        sum(frozen.gross_amount) as gross_amount,
        sum(frozen.discount_amount) as discount_amount,
        sum(frozen.prepaid_sold_amount) as prepaid_sold_amount,
        sum(frozen.prepaid_redeemed_amount) as prepaid_redeemed_amount,
        sum(frozen.gross_after_discount) as gross_after_discount,
        sum(frozen.net_after_discount) as net_after_discount,
        sum(frozen.vat_after_discount) as vat_after_discount

    from frozen
    group by all

),

now_closed as (

    select
        current_rows.location_id,
        current_rows.business_date as original_date,
        current_rows.tax_rate_percent,
        current_rows.revenue_receipt_count,
        current_rows.item_line_count,
        current_rows.gross_amount,
        current_rows.discount_amount,
        current_rows.prepaid_sold_amount,
        current_rows.prepaid_redeemed_amount,
        current_rows.gross_after_discount,
        current_rows.net_after_discount,
        current_rows.vat_after_discount

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
        coalesce(now_closed.tax_rate_percent, carried.tax_rate_percent) as tax_rate_percent,
        coalesce(now_closed.revenue_receipt_count, 0)
        - coalesce(carried.revenue_receipt_count, 0) as revenue_receipt_count,
        coalesce(now_closed.item_line_count, 0)
        - coalesce(carried.item_line_count, 0) as item_line_count,
        coalesce(now_closed.gross_amount, 0)
        - coalesce(carried.gross_amount, 0) as gross_amount,
        coalesce(now_closed.discount_amount, 0)
        - coalesce(carried.discount_amount, 0) as discount_amount,
        coalesce(now_closed.prepaid_sold_amount, 0)
        - coalesce(carried.prepaid_sold_amount, 0) as prepaid_sold_amount,
        coalesce(now_closed.prepaid_redeemed_amount, 0)
        - coalesce(carried.prepaid_redeemed_amount, 0) as prepaid_redeemed_amount,
        coalesce(now_closed.gross_after_discount, 0)
        - coalesce(carried.gross_after_discount, 0) as gross_after_discount,
        coalesce(now_closed.net_after_discount, 0)
        - coalesce(carried.net_after_discount, 0) as net_after_discount,
        coalesce(now_closed.vat_after_discount, 0)
        - coalesce(carried.vat_after_discount, 0) as vat_after_discount

    from now_closed
    full outer join carried
        on now_closed.location_id = carried.location_id
        and now_closed.original_date = carried.original_date
        and now_closed.tax_rate_percent is not distinct from carried.tax_rate_percent

),

correction_rows as (

    select
        changes.location_id,
        open_period.first_open_date as business_date,
        changes.tax_rate_percent,
        cast(changes.revenue_receipt_count as bigint) as revenue_receipt_count,
        cast(changes.item_line_count as bigint) as item_line_count,
        cast(changes.gross_amount as decimal(18, 2)) as gross_amount,
        cast(changes.discount_amount as decimal(18, 2)) as discount_amount,
        cast(changes.prepaid_sold_amount as decimal(18, 2)) as prepaid_sold_amount,
        cast(changes.prepaid_redeemed_amount as decimal(18, 2)) as prepaid_redeemed_amount,
        cast(changes.gross_after_discount as decimal(18, 2)) as gross_after_discount,
        cast(changes.net_after_discount as decimal(18, 2)) as net_after_discount,
        cast(changes.vat_after_discount as decimal(18, 2)) as vat_after_discount,
        cast(null as varchar) as closed_period,
        changes.original_date as corrects_date

    from changes
    cross join open_period
    where
        changes.revenue_receipt_count <> 0
        or changes.item_line_count <> 0
        or changes.gross_amount <> 0
        or changes.discount_amount <> 0
        or changes.prepaid_sold_amount <> 0
        or changes.prepaid_redeemed_amount <> 0
        or changes.gross_after_discount <> 0
        or changes.net_after_discount <> 0
        or changes.vat_after_discount <> 0

),

final as (

    select * from open_rows
    union all by name
    select * from frozen
    union all by name
    select * from correction_rows

)

select * from final
