-- Revenue per revenue-effective receipt and tax rate after the receipt's discount, in EUR:
-- the receipt's gross (rounded to cents) and its discount allocated to its tax rates in
-- proportion to the rates' gross, by the largest-remainder method, so the cents add up per
-- receipt. Single-purpose vouchers (fct_prepaid_vouchers) are revenue at their rate on the
-- receipt that sold them, and what they pay of a receipt is taken out of its rate there.
-- Lines collected for someone else (fct_pass_through) are left out, their cents out of the
-- receipt's gross. rpt_vat_by_rate sums it per day; the booking trace
-- (rpt_booking_receipts) names each receipt's share of a revenue booking with it.
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

receipt_lines as (

    select
        location_id,
        business_date,
        transaction_id,
        tax_rate_percent,
        item_line_count,
        gross_units,
        discount_units

    from allocated

),

prepaid_receipts as (

    select
        location_id,
        business_date,
        transaction_id,
        tax_rate_percent,
        to_cent_units(sum(sold_amount)) as sold_units,
        to_cent_units(sum(redeemed_amount)) as redeemed_units

    from prepaid
    group by location_id, business_date, transaction_id, tax_rate_percent

),

joined as (

    select
        coalesce(receipt_lines.location_id, prepaid_receipts.location_id) as location_id,
        coalesce(receipt_lines.business_date, prepaid_receipts.business_date)
            as business_date,
        coalesce(receipt_lines.transaction_id, prepaid_receipts.transaction_id)
            as transaction_id,
        coalesce(receipt_lines.tax_rate_percent, prepaid_receipts.tax_rate_percent)
            as tax_rate_percent,
        coalesce(receipt_lines.item_line_count, 0) as item_line_count,
        coalesce(receipt_lines.gross_units, 0) as gross_units,
        coalesce(receipt_lines.discount_units, 0) as discount_units,
        coalesce(prepaid_receipts.sold_units, 0) as sold_units,
        coalesce(prepaid_receipts.redeemed_units, 0) as redeemed_units

    from receipt_lines
    full outer join prepaid_receipts
        on receipt_lines.location_id = prepaid_receipts.location_id
        and receipt_lines.business_date = prepaid_receipts.business_date
        and receipt_lines.transaction_id = prepaid_receipts.transaction_id
        and receipt_lines.tax_rate_percent = prepaid_receipts.tax_rate_percent

),

final as (

    select
        location_id,
        business_date,
        transaction_id,
        tax_rate_percent,
        cast(item_line_count as bigint) as item_line_count,
        from_cent_units(gross_units) as gross_amount,
        from_cent_units(discount_units) as discount_amount,
        from_cent_units(sold_units) as prepaid_sold_amount,
        from_cent_units(redeemed_units) as prepaid_redeemed_amount,
        from_cent_units(gross_units - discount_units + sold_units - redeemed_units)
            as gross_after_discount

    from joined

)

select * from final
