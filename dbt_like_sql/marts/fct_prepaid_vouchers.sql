-- Single-purpose vouchers ([[accounting.voucher_categories]] with purpose = "single") sold
-- and redeemed, per receipt and VAT rate, in EUR: VAT is due when they are sold, so a
-- sale is revenue at the voucher's rate and a redemption takes its amount out of the
-- revenue of the receipt it pays. Multi-purpose vouchers (the default) are not here.
with

items as (

    select * from fct_receipt_items

),

payments as (

    select * from fct_payments

),

sold as (

    select
        location_id,
        business_date,
        transaction_id,
        payment_group_name,
        prepaid_sale_rate(product_nr) as tax_rate_percent,
        cast(null as varchar) as payment_type_name,
        cast(null as varchar) as fibu_account_nr,
        round_cent(sum(line_gross_amount)) as sold_amount,
        0 as redeemed_amount

    from items
    where
        is_settlement(transaction_type)
        and not is_revenue_effective
        and is_voucher_sale(payment_group_name)
        and prepaid_sale_rate(product_nr) is not null
    group by
        location_id,
        business_date,
        transaction_id,
        payment_group_name,
        prepaid_sale_rate(product_nr)

),

redeemed as (

    select
        location_id,
        business_date,
        transaction_id,
        payment_group_name,
        prepaid_payment_rate(payment_type_name) as tax_rate_percent,
        payment_type_name,
        fibu_account_nr,
        0 as sold_amount,
        round_cent(sum(amount)) as redeemed_amount

    from payments
    where
        is_revenue_effective(payment_group_name, transaction_type)
        and prepaid_payment_rate(payment_type_name) is not null
    group by
        location_id,
        business_date,
        transaction_id,
        payment_group_name,
        payment_type_name,
        fibu_account_nr,
        prepaid_payment_rate(payment_type_name)

),

final as (

    select * from sold
    union all by name
    select * from redeemed

)

select * from final
