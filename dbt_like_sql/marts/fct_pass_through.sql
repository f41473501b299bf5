-- Money the till collects for someone else ([[accounting.pass_through]]: a tourist tax
-- such as the Ortstaxe) on revenue-effective receipts, per receipt: not revenue and no
-- VAT, so rpt_vat_by_rate leaves these lines out and the daily close books them to their
-- own account. The spec's turnover (fct_turnover_daily) keeps them: its rule knows no
-- such lines.
with

items as (

    select * from fct_receipt_items

),

final as (

    select
        location_id,
        business_date,
        transaction_id,
        pass_through_name(product_nr) as pass_through_name,
        pass_through_account(product_nr) as pass_through_account,
        round_cent(sum(line_gross_amount)) as amount

    from items
    where
        is_revenue_effective
        and pass_through_account(product_nr) is not null
    group by all

)

select * from final
