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

counts as (

    select
        location_id,
        business_date,
        transaction_id,
        receipted_at_utc

    from receipts
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
stretched as (

    select
        receipts.*,
        (
            select count(*) from counts
            where
                counts.location_id = receipts.location_id
                and counts.business_date = receipts.business_date
                and (
                    counts.receipted_at_utc < receipts.receipted_at_utc
                    or (
                        counts.receipted_at_utc = receipts.receipted_at_utc
                        and counts.transaction_id < receipts.transaction_id
                    )
                )
        ) as stretch

    from receipts
    where
        is_settlement(receipts.transaction_type)
        or is_cash_record(receipts.transaction_type)

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
        (
            select string_agg(distinct items.product_name, '; ' order by items.product_name)
            from items
            where
                items.location_id = stretched.location_id
                and items.transaction_id = stretched.transaction_id
        ) as movement_text,
        (
            select any_value(payments.fibu_account_nr)
            from payments
            where
                payments.location_id = stretched.location_id
                and payments.transaction_id = stretched.transaction_id
        ) as fibu_account_nr,
        stretched.staff_name

    from stretched
    left join cash_paid
        on stretched.location_id = cash_paid.location_id
        and stretched.transaction_id = cash_paid.transaction_id
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
