-- The audit trail from booking line to receipts and back (GoBD: progressive and
-- retrograde): for each line of rpt_daily_close_bookings (what the DATEV and BMD files
-- book), the receipts it sums and each receipt's share, in EUR. A revenue line sums the
-- receipts' revenue at its rate (fct_receipt_revenue), tips their tips, a pass-through
-- line what they collected for others, a non-revenue line the settlements of its payment
-- group (single-purpose vouchers sold taken out), a payment line the payments of its type
-- posted to its account (single-purpose vouchers redeemed taken out); a day's difference
-- line sums each receipt's own difference (what it was paid minus what it booked). Per
-- booking line the shares add up to its amount (a data check holds it to the cent).
with

bookings as (

    select * from rpt_daily_close_bookings

),

receipts as (

    select * from fct_receipts

),

prepaid as (

    select * from fct_prepaid_vouchers

),

revenue as (

    select
        location_id,
        business_date,
        transaction_id,
        'revenue' as booking_kind,
        cast(tax_rate_percent as varchar) as line_key,
        gross_after_discount as amount

    from fct_receipt_revenue

),

tips as (

    select
        location_id,
        business_date,
        transaction_id,
        'tips' as booking_kind,
        '' as line_key,
        tip_amount as amount

    from receipts
    where is_revenue_effective and coalesce(tip_amount, 0) <> 0

),

pass_through as (

    select
        location_id,
        business_date,
        transaction_id,
        'pass_through' as booking_kind,
        pass_through_name as line_key,
        sum(amount) as amount

    from fct_pass_through
    group by location_id, business_date, transaction_id, pass_through_name

),

prepaid_sold as (

    select
        location_id,
        business_date,
        transaction_id,
        sum(sold_amount) as sold_amount

    from prepaid
    group by location_id, business_date, transaction_id

),

non_revenue as (

    select
        receipts.location_id,
        receipts.business_date,
        receipts.transaction_id,
        'non_revenue' as booking_kind,
        coalesce(nullif(receipts.payment_group_name, ''), 'ohne Zahlungsgruppe') as line_key,
        receipts.total_amount - coalesce(prepaid_sold.sold_amount, 0) as amount

    from receipts
    left join prepaid_sold
        on receipts.location_id = prepaid_sold.location_id
        and receipts.business_date = prepaid_sold.business_date
        and receipts.transaction_id = prepaid_sold.transaction_id
    where receipts.is_settlement and not receipts.is_revenue_effective

),

payments as (

    select
        location_id,
        business_date,
        transaction_id,
        'payment' as booking_kind,
        payment_type_name || chr(31) || coalesce(debit_account, '') as line_key,
        sum(amount) as amount

    from fct_receipt_payments
    group by location_id, business_date, transaction_id, payment_type_name, debit_account

),

credited as (

    select * from revenue
    union all by name
    select * from tips
    union all by name
    select * from pass_through
    union all by name
    select * from non_revenue

),

booked as (

    select * from credited
    union all by name
    select * from payments

),

differences as (

    -- what a receipt was paid (as booked) minus what it booked: its share of the day's
    -- difference
    select
        location_id,
        business_date,
        transaction_id,
        'difference' as booking_kind,
        '' as line_key,
        sum(case when booking_kind = 'payment' then amount else -amount end) as amount

    from booked
    group by location_id, business_date, transaction_id

),

shares as (

    select * from booked
    union all by name
    select * from differences

),

lines as (

    select
        location_id,
        business_date,
        booking_number,
        document_number,
        booking_kind,
        debit_account,
        credit_account,
        amount as booking_amount,
        case booking_kind
            when 'revenue' then cast(tax_rate_percent as varchar)
            when 'payment' then booking_text || chr(31) || coalesce(debit_account, '')
            when 'pass_through' then booking_text
            when 'non_revenue' then booking_text
            else ''
        end as line_key

    from bookings

),

final as (

    select
        lines.location_id,
        lines.business_date,
        lines.booking_number,
        lines.document_number,
        lines.booking_kind,
        lines.debit_account,
        lines.credit_account,
        lines.booking_amount,
        shares.transaction_id,
        receipts.receipted_at_local,
        receipts.transaction_type,
        round_cent(receipts.total_amount) as receipt_total_amount,
        cast(shares.amount as decimal(18, 2)) as amount

    from lines
    inner join shares
        on lines.location_id = shares.location_id
        and lines.business_date = shares.business_date
        and lines.booking_kind = shares.booking_kind
        and lines.line_key = shares.line_key
    inner join receipts
        on shares.location_id = receipts.location_id
        and shares.business_date = receipts.business_date
        and shares.transaction_id = receipts.transaction_id
    where shares.amount <> 0

)

select * from final
