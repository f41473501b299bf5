with

transactions as (

    select * from stg_pos__voucher_transactions

),

-- The ledger counts whole cents (spec 2.6); the mart says euros, DECIMAL(18,2), as every
-- mart's money to the cent.
final as (

    select
        * exclude (amount_cents),
        from_cent_units(amount_cents) as amount

    from transactions

)

select * from final
