-- The daily close as bookings, through the clearing account: revenue per tax rate (gross
-- after discounts), tips and each non-revenue payment group are credited to their
-- accounts, each payment type's payments debited to its account (payment_account: the
-- config's, else the POS's fibuAccountNr where it fits the chart), a day's
-- difference goes to the suspense account; what the receipts collected for someone else
-- (fct_pass_through: a tourist tax) is credited to its own account, without VAT. What the
-- DATEV and BMD exports write; the accounts come from [accounting.accounts] (the macros
-- of the config), each side with its role in the chart. A single-purpose
-- voucher's sale is revenue (in rpt_vat_by_rate), not its group's; a payment that
-- redeems one moves no money and was revenue at the sale, so it is not booked. A business
-- date loaded before it was over (provisional) books nothing until it is loaded again.
with

provisional_days as (

    select
        location_id,
        business_date
    from lake.revenue_loads
    where provisional

),

revenue as (

    select
        location_id,
        business_date,
        1 as line_group,
        'revenue' as booking_kind,
        rtrim(rtrim(cast(tax_rate_percent as varchar), '0'), '.') as sort_key,
        gross_after_discount as amount,
        booking_account('clearing') as debit_account,
        'clearing' as debit_role,
        revenue_account(tax_rate_percent) as credit_account,
        'revenue' as credit_role,
        tax_rate_percent,
        vat_after_discount as tax_amount,
        'Erlöse ' || rtrim(rtrim(cast(tax_rate_percent as varchar), '0'), '.') || ' %'
            as booking_text

    from rpt_vat_by_rate_current

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
        'clearing' as debit_role,
        booking_account('tip') as credit_account,
        'tip' as credit_role,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        'Trinkgeld' as booking_text

    from rpt_daily_close_current

),

pass_through as (

    select
        location_id,
        business_date,
        2 as line_group,
        'pass_through' as booking_kind,
        pass_through_name as sort_key,
        sum(amount) as amount,
        booking_account('clearing') as debit_account,
        'clearing' as debit_role,
        pass_through_account as credit_account,
        'pass_through' as credit_role,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        pass_through_name as booking_text

    from fct_pass_through
    group by location_id, business_date, pass_through_name, pass_through_account

),

non_revenue as (

    select
        location_id,
        business_date,
        3 as line_group,
        'non_revenue' as booking_kind,
        coalesce(payment_group_name, '') as sort_key,
        amount,
        booking_account('clearing') as debit_account,
        'clearing' as debit_role,
        non_revenue_account(coalesce(payment_group_name, '')) as credit_account,
        non_revenue_role(coalesce(payment_group_name, '')) as credit_role,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        coalesce(nullif(payment_group_name, ''), 'ohne Zahlungsgruppe') as booking_text

    -- the non-revenue settlements per payment group, single-purpose voucher sales taken
    -- out (they are revenue): the reconciliation's lines 401 and on
    from rpt_payment_reconciliation
    where line_number between 401 and 799

),

payments as (

    select
        location_id,
        business_date,
        4 as line_group,
        'payment' as booking_kind,
        payment_type_name || chr(31) || coalesce(debit_account, '') as sort_key,
        sum(amount) as amount,
        debit_account,
        payment_role(payment_type_name) as debit_role,
        booking_account('clearing') as credit_account,
        'clearing' as credit_role,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        payment_type_name as booking_text,
        -- the POS's accounts of an unmapped payment type, for the export's refusal
        string_agg(distinct fibu_account_nr, ', ' order by fibu_account_nr) as pos_accounts

    -- per payment type and the account it posts to, single-purpose vouchers redeemed
    -- taken out (they were revenue at the sale: no money moves)
    from fct_receipt_payments
    group by location_id, business_date, payment_type_name, debit_account

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
        'clearing' as debit_role,
        booking_account('suspense') as credit_account,
        'suspense' as credit_role,
        cast(null as decimal(9, 4)) as tax_rate_percent,
        cast(null as decimal(18, 2)) as tax_amount,
        'Kassendifferenz' as booking_text

    from rpt_daily_close_current

),

lines as (

    select * from revenue
    union all by name
    select * from tips
    union all by name
    select * from pass_through
    union all by name
    select * from non_revenue
    union all by name
    select * from payments
    union all by name
    select * from differences

),

final_lines as (

    select lines.*
    from lines
    anti join provisional_days
        on lines.location_id = provisional_days.location_id
        and lines.business_date = provisional_days.business_date

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
        debit_role,
        credit_account,
        credit_role,
        cast(amount as decimal(18, 2)) as amount,
        tax_rate_percent,
        cast(tax_amount as decimal(18, 2)) as tax_amount,
        booking_kind,
        booking_text,
        pos_accounts

    from final_lines
    where amount <> 0

)

select * from final
