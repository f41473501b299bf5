-- The cash book's records of a location's business date, in the order they happened: the
-- cash takings between two counts (one row per stretch), every Kassabuch movement, every
-- Bargeldzählung (the counted cash) and the card terminal's cut (TerminalKassenschnitt,
-- not cash). How the spec's untyped records are read: docs/source-api.md ("Cash book").
with

receipts as (

    select * from stg_pos__receipts

),

payments as (

    select * from stg_pos__payments

),

items as (

    select * from stg_pos__receipt_items

),

cash_records as (

    select * from receipts
    where is_cash_record(transaction_type)

),

-- the day's counts, numbered: a record after the n-th count is in stretch n
counts as (

    select
        location_id,
        business_date,
        receipted_at_utc,
        transaction_id,
        row_number() over (
            partition by location_id, business_date
            order by receipted_at_utc, transaction_id
        ) as count_number

    from cash_records
    where transaction_type = 'Bargeldzählung'

),

cash_paid as (

    select
        location_id,
        transaction_id,
        sum(amount) as amount

    from payments
    where is_cash_payment(payment_type_name)
    group by all

),

-- which stretch of the day a record falls in: the number of the day's counts before it
-- (a count itself is in the stretch it closes)
stretched as (

    select
        records.*,
        coalesce(counts.count_number, 0) as stretch

    from (
        select * from receipts
        where is_settlement(transaction_type) or is_cash_record(transaction_type)
    ) as records
    asof left join counts
        on records.location_id = counts.location_id
        and records.business_date = counts.business_date
        and records.receipted_at_utc > counts.receipted_at_utc

),

texts as (

    select
        items.location_id,
        items.transaction_id,
        string_agg(distinct items.product_name, '; ' order by items.product_name)
            as movement_text

    from items
    semi join cash_records
        on items.location_id = cash_records.location_id
        and items.transaction_id = cash_records.transaction_id
    group by all

),

accounts as (

    select
        payments.location_id,
        payments.transaction_id,
        min(payments.fibu_account_nr) as fibu_account_nr

    from payments
    semi join cash_records
        on payments.location_id = cash_records.location_id
        and payments.transaction_id = cash_records.transaction_id
    group by all

),

takings as (

    select
        stretched.location_id,
        stretched.business_date,
        stretched.stretch,
        0 as kind_order,
        max(stretched.receipted_at_utc) as recorded_at_utc,
        max(stretched.receipted_at_local) as recorded_at_local,
        'takings' as movement_kind,
        cast(null as varchar) as transaction_id,
        sum(cash_paid.amount) as amount,
        count(*) as receipt_count,
        cast(null as varchar) as movement_text,
        cast(null as varchar) as fibu_account_nr,
        cast(null as varchar) as staff_name

    from stretched
    inner join cash_paid
        on stretched.location_id = cash_paid.location_id
        and stretched.transaction_id = cash_paid.transaction_id
    where is_settlement(stretched.transaction_type)
    group by stretched.location_id, stretched.business_date, stretched.stretch

),

records as (

    select
        stretched.location_id,
        stretched.business_date,
        stretched.stretch,
        case stretched.transaction_type when 'Bargeldzählung' then 2 else 1 end
            as kind_order,
        stretched.receipted_at_utc as recorded_at_utc,
        stretched.receipted_at_local as recorded_at_local,
        case
            when stretched.transaction_type = 'Bargeldzählung' then 'count'
            when stretched.transaction_type = 'TerminalKassenschnitt' then 'terminal_cut'
            when coalesce(cash_paid.amount, stretched.total_amount) < 0 then 'withdrawal'
            else 'deposit'
        end as movement_kind,
        stretched.transaction_id,
        -- a movement is its cash payments where it has any, else its total; a count and
        -- a terminal's cut are their totals
        case
            when stretched.transaction_type = 'Kassabuch'
                then coalesce(cash_paid.amount, stretched.total_amount)
            else stretched.total_amount
        end as amount,
        1 as receipt_count,
        texts.movement_text,
        accounts.fibu_account_nr,
        stretched.staff_name

    from stretched
    left join cash_paid
        on stretched.location_id = cash_paid.location_id
        and stretched.transaction_id = cash_paid.transaction_id
    left join texts
        on stretched.location_id = texts.location_id
        and stretched.transaction_id = texts.transaction_id
    left join accounts
        on stretched.location_id = accounts.location_id
        and stretched.transaction_id = accounts.transaction_id
    where is_cash_record(stretched.transaction_type)

),

entries as (

    select * from takings
    union all by name
    select * from records

),

final as (

    select
        location_id,
        business_date,
        row_number() over (
            partition by location_id, business_date
            order by stretch, kind_order, recorded_at_utc, transaction_id
        ) as entry_number,
        recorded_at_local,
        movement_kind,
        movement_kind in ('takings', 'deposit', 'withdrawal') as is_cash_flow,
        transaction_id,
        exact_amount(amount) as amount,
        cast(receipt_count as bigint) as receipt_count,
        movement_text,
        fibu_account_nr,
        staff_name

    from entries

)

select * from final
