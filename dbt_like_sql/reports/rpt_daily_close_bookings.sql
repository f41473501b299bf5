-- The daily close as bookings, through the clearing account: revenue per tax rate (gross
-- after discounts), tips and each non-revenue payment group are credited to their
-- accounts, each payment type's payments debited to its fibuAccountNr, a day's
-- difference goes to the suspense account. What the DATEV and BMD exports write; the
-- accounts come from [accounting.datev] (the macros of the config).
with

revenue as (

    select
        location_id,
        business_date,
        1 as line_group,
        'revenue' as booking_kind,
        rtrim(rtrim(cast(tax_rate_percent as varchar), '0'), '.') as sort_key,
        gross_after_discount as amount,
        booking_account('clearing') as debit_account,
        revenue_account(tax_rate_percent) as credit_account,
        tax_rate_percent,
        vat_after_discount as tax_amount,
        'Erlöse ' || rtrim(rtrim(cast(tax_rate_percent as varchar), '0'), '.') || ' %'
            as booking_text

    from rpt_vat_by_rate

),

tips as (

    select
        location_id,
        business_date,
        2 as line_group,
        'tips' as booking_kind,
        '' as sort_key,
        tip_amount as amount,
        booking_account('clearing') as debit_account,
        booking_account('tip') as credit_account,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        'Trinkgeld' as booking_text

    from rpt_daily_close

),

settled_groups as (

    select
        location_id,
        business_date,
        coalesce(payment_group_name, '') as group_name,
        total_amount

    from fct_receipts
    where is_settlement and not is_revenue_effective

),

non_revenue as (

    select
        location_id,
        business_date,
        3 as line_group,
        'non_revenue' as booking_kind,
        group_name as sort_key,
        cents(sum(total_amount)) as amount,
        booking_account('clearing') as debit_account,
        non_revenue_account(group_name) as credit_account,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        coalesce(nullif(group_name, ''), 'ohne Zahlungsgruppe') as booking_text

    from settled_groups
    group by location_id, business_date, group_name

),

payments as (

    select
        location_id,
        business_date,
        4 as line_group,
        'payment' as booking_kind,
        payment_type_name || chr(31) || coalesce(fibu_account_nr, '') as sort_key,
        payment_amount as amount,
        coalesce(fibu_account_nr, booking_account('cash')) as debit_account,
        booking_account('clearing') as credit_account,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        payment_type_name as booking_text

    from rpt_daily_close_payments

),

differences as (

    select
        location_id,
        business_date,
        5 as line_group,
        'difference' as booking_kind,
        '' as sort_key,
        difference_amount as amount,
        booking_account('clearing') as debit_account,
        booking_account('suspense') as credit_account,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        'Kassendifferenz' as booking_text

    from rpt_daily_close

),

lines as (

    select * from revenue
    union all by name
    select * from tips
    union all by name
    select * from non_revenue
    union all by name
    select * from payments
    union all by name
    select * from differences

),

final as (

    select
        location_id,
        business_date,
        row_number() over (
            partition by location_id, business_date order by line_group, sort_key, amount
        ) as booking_number,
        'Z' || location_id || '-' || strftime(business_date, '%Y%m%d') as document_number,
        debit_account,
        credit_account,
        amount,
        tax_rate_percent,
        tax_amount,
        booking_kind,
        booking_text

    from lines
    where amount <> 0

)

select * from final
