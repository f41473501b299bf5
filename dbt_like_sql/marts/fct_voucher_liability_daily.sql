with

vouchers as (

    select * from stg_pos__vouchers

),

final as (

    select
        snapshot_date,
        voucher_category_id,
        any_value(voucher_category_name) as voucher_category_name,
        count(*) as voucher_count,
        count(*) filter (where balance_cents > 0) as open_voucher_count,
        -- cents stay BIGINT (a sum would widen them to HUGEINT, which BI tools read badly)
        cast(sum(balance_cents) as bigint) as outstanding_balance_cents,
        cast(sum(balance_cents) filter (
            where is_enabled
            and (expires_at is null or expires_at >= cast(snapshot_date as timestamptz))
        ) as bigint) as redeemable_balance_cents,
        cast(sum(amount_cents) as bigint) as face_value_cents

    from vouchers
    group by snapshot_date, voucher_category_id

)

select * from final
