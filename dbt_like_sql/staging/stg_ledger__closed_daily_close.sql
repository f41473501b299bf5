-- The rows of rpt_daily_close of a closed period's days as they were closed (the daily closes
-- as close-period found them): what rpt_daily_close shows of a closed period.
with

source as (

    select * from lake.closed_daily_close

),

renamed as (

    select
        period as closed_period,
        cast(location_id as integer) as location_id,
        business_date,
        revenue_receipt_count,
        gross_amount,
        discount_amount,
        revenue_amount,
        net_amount,
        vat_amount,
        tip_amount,
        pass_through_amount,
        non_revenue_receipt_count,
        non_revenue_amount,
        voucher_sold_amount,
        voucher_redeemed_amount,
        prepaid_redeemed_amount,
        payment_amount,
        difference_amount,
        reversal_count,
        reversal_amount,
        void_count,
        void_gross_amount,
        spec_turnover_net,
        is_closed

    from source

)

select * from renamed
