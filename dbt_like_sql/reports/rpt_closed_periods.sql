with

closed_periods as (

    select * from stg_ledger__closed_periods

),

final as (

    select * from closed_periods

)

select * from final
