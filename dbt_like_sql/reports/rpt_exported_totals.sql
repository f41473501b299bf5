with

exported_totals as (

    select * from stg_ledger__exported_totals

),

final as (

    select * from exported_totals

)

select * from final
