with

drift as (

    select * from stg_pos__source_drift

),

final as (

    select
        location_id,
        business_date,
        detected_at,
        receipts_before,
        receipts_after,
        receipts_after - receipts_before as receipts_difference,
        turnover_net_before,
        turnover_net_after,
        turnover_net_after - turnover_net_before as turnover_net_difference,
        round_cent(turnover_net_before) as turnover_net_before_rounded,
        round_cent(turnover_net_after) as turnover_net_after_rounded,
        cast(round_cent(turnover_net_after) - round_cent(turnover_net_before) as decimal(18, 2))
            as turnover_net_difference_rounded,
        replaced_load_id,
        new_load_id

    from drift

)

select * from final
