-- The rows of rpt_vat_by_rate of a closed period's days as they were closed (the VAT per rate
-- as close-period found them): what rpt_vat_by_rate shows of a closed period.
with

source as (

    select * from lake.closed_vat_by_rate

),

renamed as (

    select
        period as closed_period,
        cast(location_id as integer) as location_id,
        business_date,
        corrects_date,
        tax_rate_percent,
        revenue_receipt_count,
        item_line_count,
        gross_amount,
        discount_amount,
        prepaid_sold_amount,
        prepaid_redeemed_amount,
        gross_after_discount,
        net_after_discount,
        vat_after_discount

    from source

)

select * from renamed
