with

history as (

    select * from dim_vouchers_history

),

final as (

    select *
    from history
    qualify snapshot_date = max(snapshot_date) over ()

)

select * from final
