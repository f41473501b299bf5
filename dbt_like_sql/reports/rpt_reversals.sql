with

receipts as (

    select * from fct_receipts

),

final as (

    select
        location_id,
        business_date,
        transaction_id,
        transaction_type,
        receipted_at_local,
        staff_name,
        table_name,
        payment_group_name,
        item_line_count,
        items_net_amount,
        items_gross_amount,
        total_amount,
        payments_amount,
        is_revenue_effective

    from receipts
    where transaction_type in ('Stornieren', 'RechnungZurückholen')

)

select * from final
