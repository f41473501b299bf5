with

closed_bookings as (

    select * from stg_ledger__closed_bookings

),

final as (

    select * from closed_bookings

)

select * from final
