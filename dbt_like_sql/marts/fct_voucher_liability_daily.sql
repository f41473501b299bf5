with

vouchers as (

    select * from stg_pos__vouchers

),

final as (

    select
        snapshot_date,
        voucher_category_id,
        min(voucher_category_name) as voucher_category_name,
        count(*) as voucher_count,
        count(*) filter (where balance_cents > 0) as open_voucher_count,
        -- the ledger's whole cents as euros, DECIMAL(18,2)
        from_cent_units(sum(balance_cents)) as outstanding_balance_amount,
        from_cent_units(sum(balance_cents) filter (
            where is_enabled
            and (expires_at is null or expires_at >= cast(snapshot_date as timestamptz))
        )) as redeemable_balance_amount,
        from_cent_units(sum(amount_cents)) as face_value_amount

    from vouchers
    group by snapshot_date, voucher_category_id

)

select * from final
