-- The VAT base after receipt discounts, in EUR. Each receipt's gross (rounded to cents) and
-- its discount are allocated to its tax rates in proportion to the rates' gross, by the
-- largest-remainder method, so the cents add up per receipt and so per day: per location
-- and day, gross_after_discount sums to what the receipts were paid net of tips (a data
-- check holds it). Net is gross_after_discount / (1 + rate) rounded half away from zero;
-- VAT is the rest, so net + VAT = gross on every row. Single-purpose vouchers
-- (fct_prepaid_vouchers) are revenue at their rate when sold, and what they pay of a
-- receipt is taken out of its rate's base (their VAT was due at the sale). Lines collected
-- for someone else (fct_pass_through: a tourist tax) are not revenue: left out, with their
-- cents taken out of the receipt's gross and no share of its discount.
with

lines as (

    select * from fct_receipt_items
    where is_revenue_effective and pass_through_account(product_nr) is null

),

pass_through as (

    select
        location_id,
        business_date,
        transaction_id,
        sum(amount) as amount

    from fct_pass_through
    group by all

),

receipts as (

    select * from fct_receipts
    where is_revenue_effective

),

prepaid as (

    select * from fct_prepaid_vouchers

),

receipt_rates as (

    select
        location_id,
        business_date,
        transaction_id,
        tax_rate_percent,
        count(*) as item_line_count,
        to_weight(sum(line_gross_amount)) as weight

    from lines
    group by all

),

weighted as (

    select
        receipt_rates.*,
        sum(receipt_rates.weight) over receipt as receipt_weight,
        row_number() over (receipt order by receipt_rates.tax_rate_percent) as share_rank,
        to_cent_units(receipts.items_gross_amount)
        - to_cent_units(coalesce(pass_through.amount, 0)) as receipt_gross_units,
        to_cent_units(coalesce(receipts.discount_amount, 0)) as receipt_discount_units

    from receipt_rates
    inner join receipts
        on receipt_rates.location_id = receipts.location_id
        and receipt_rates.business_date = receipts.business_date
        and receipt_rates.transaction_id = receipts.transaction_id
    left join pass_through
        on receipt_rates.location_id = pass_through.location_id
        and receipt_rates.business_date = pass_through.business_date
        and receipt_rates.transaction_id = pass_through.transaction_id
    window receipt as (
        partition by
            receipt_rates.location_id,
            receipt_rates.business_date,
            receipt_rates.transaction_id
    )

),

floors as (

    select
        *,
        share_floor(receipt_gross_units, weight, receipt_weight, share_rank) as gross_floor,
        share_floor(receipt_discount_units, weight, receipt_weight, share_rank)
            as discount_floor

    from weighted

),

-- The cents the floors leave per receipt go one each to the largest remainders.
remainders as (

    select
        *,
        share_remainder(receipt_gross_units, weight, receipt_weight, gross_floor)
            as gross_remainder,
        share_remainder(receipt_discount_units, weight, receipt_weight, discount_floor)
            as discount_remainder

    from floors

),

ranked as (

    select
        *,
        row_number() over (receipt order by gross_remainder desc, tax_rate_percent asc)
            as gross_remainder_rank,
        receipt_gross_units - sum(gross_floor) over receipt as gross_units_left,
        row_number() over (receipt order by discount_remainder desc, tax_rate_percent asc)
            as discount_remainder_rank,
        receipt_discount_units - sum(discount_floor) over receipt as discount_units_left

    from remainders
    window receipt as (partition by location_id, business_date, transaction_id)

),

allocated as (

    select
        *,
        gross_floor
        + case when gross_remainder_rank <= gross_units_left then 1 else 0 end
            as gross_units,
        discount_floor
        + case when discount_remainder_rank <= discount_units_left then 1 else 0 end
            as discount_units

    from ranked

),

line_days as (

    select
        location_id,
        business_date,
        tax_rate_percent,
        count(*) as revenue_receipt_count,
        cast(sum(item_line_count) as bigint) as item_line_count,
        sum(gross_units) as gross_units,
        sum(discount_units) as discount_units

    from allocated
    group by location_id, business_date, tax_rate_percent

),

prepaid_days as (

    select
        location_id,
        business_date,
        tax_rate_percent,
        to_cent_units(sum(sold_amount)) as sold_units,
        to_cent_units(sum(redeemed_amount)) as redeemed_units

    from prepaid
    group by location_id, business_date, tax_rate_percent

),

daily as (

    select
        coalesce(line_days.location_id, prepaid_days.location_id) as location_id,
        coalesce(line_days.business_date, prepaid_days.business_date) as business_date,
        coalesce(line_days.tax_rate_percent, prepaid_days.tax_rate_percent)
            as tax_rate_percent,
        coalesce(line_days.revenue_receipt_count, 0) as revenue_receipt_count,
        coalesce(line_days.item_line_count, 0) as item_line_count,
        coalesce(line_days.gross_units, 0) as gross_units,
        coalesce(line_days.discount_units, 0) as discount_units,
        coalesce(prepaid_days.sold_units, 0) as sold_units,
        coalesce(prepaid_days.redeemed_units, 0) as redeemed_units,
        coalesce(line_days.gross_units, 0) - coalesce(line_days.discount_units, 0)
        + coalesce(prepaid_days.sold_units, 0) - coalesce(prepaid_days.redeemed_units, 0)
            as after_units

    from line_days
    full outer join prepaid_days
        on line_days.location_id = prepaid_days.location_id
        and line_days.business_date = prepaid_days.business_date
        and line_days.tax_rate_percent = prepaid_days.tax_rate_percent

),

final as (

    select
        location_id,
        business_date,
        tax_rate_percent,
        revenue_receipt_count,
        item_line_count,
        from_cent_units(gross_units) as gross_amount,
        from_cent_units(discount_units) as discount_amount,
        from_cent_units(sold_units) as prepaid_sold_amount,
        from_cent_units(redeemed_units) as prepaid_redeemed_amount,
        from_cent_units(after_units) as gross_after_discount,
        from_cent_units(net_of_gross_cents(after_units, tax_rate_percent))
            as net_after_discount,
        from_cent_units(after_units - net_of_gross_cents(after_units, tax_rate_percent))
            as vat_after_discount

    from daily

)

select * from final
