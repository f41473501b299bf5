with

spots as (

    select * from stg_pos__spots

),

final as (

    select * from spots

)

select * from final
