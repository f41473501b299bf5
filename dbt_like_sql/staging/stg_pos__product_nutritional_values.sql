-- value is the POS's text (a number serialized as a string, spec 2.5), kept as sent.
with

source as (

    select * from lake.product_nutritional_values

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(snapshot_date as date) as snapshot_date,
        product_id,
        position as value_position,
        name as nutrient_name,
        unit as nutrient_unit,
        value as nutrient_value_text,
        belongs_to as belongs_to_product_id

    from source

)

select * from renamed
