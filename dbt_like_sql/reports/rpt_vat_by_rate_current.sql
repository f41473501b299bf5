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

receipts as (

    select * from fct_receipt_revenue

),

daily as (

    select
        location_id,
        business_date,
        tax_rate_percent,
        count(*) filter (where item_line_count > 0) as revenue_receipt_count,
        cast(sum(item_line_count) as bigint) as item_line_count,
        to_cent_units(sum(gross_amount)) as gross_units,
        to_cent_units(sum(discount_amount)) as discount_units,
        to_cent_units(sum(prepaid_sold_amount)) as sold_units,
        to_cent_units(sum(prepaid_redeemed_amount)) as redeemed_units,
        to_cent_units(sum(gross_after_discount)) as after_units

    from receipts
    group by location_id, business_date, tax_rate_percent

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
