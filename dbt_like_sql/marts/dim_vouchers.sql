with

vouchers as (

    select * from stg_pos__vouchers

),

final as (

    select *
    from vouchers
    qualify snapshot_date = max(snapshot_date) over ()

)

select * from final
