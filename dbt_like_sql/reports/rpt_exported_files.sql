with

exported_files as (

    select * from stg_ledger__exported_files

),

final as (

    select * from exported_files

)

select * from final
