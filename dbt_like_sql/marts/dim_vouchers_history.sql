with

vouchers as (

    select * from stg_pos__vouchers

),

-- The ledger counts whole cents (spec 2.6); the mart says euros, DECIMAL(18,2), as every
-- mart's money to the cent.
final as (

    select
        * exclude (amount_cents, balance_cents, max_amount_cents),
        from_cent_units(amount_cents) as face_value_amount,
        from_cent_units(balance_cents) as balance_amount,
        from_cent_units(max_amount_cents) as top_up_ceiling_amount

    from vouchers

)

select * from final
