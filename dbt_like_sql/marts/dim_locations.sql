-- One row per configured location: its id, short code, name, cost centre, time zone and
-- the business dates it should have (the config's [[locations]], as the build found it).
with

locations as (

    select * from configured_locations()

),

final as (

    select
        location_id,
        short_code,
        location_name,
        cost_center,
        timezone,
        business_day_starts,
        first_business_date,
        last_business_date

    from locations

)

select * from final
