with

source as (

    select * from lake.receipts

),

renamed as (

    select
        cast(location_id as integer) as location_id,
        cast(business_date as date) as business_date,
        transaction_id,
        transaction_type,
        receipt_type,
        total_amount,
        tip as tip_amount,
        discount as discount_amount,
        date_time_local as receipted_at_local,
        date_time_utc as receipted_at_utc,
        business_id,
        business_name,
        resolved_location_id,
        resolved_location_name,
        staff_id,
        staff_number,
        staff_name,
        table_id,
        table_number,
        table_name,
        area_id,
        area_number,
        area_name,
        customer_id,
        customer_number,
        customer_name,
        payment_group_id,
        payment_group_name,
        guest_count,
        load_id,
        loaded_at,
        extra_fields

    from source

)

-- A receipt the POS corrected after it was loaded (moved to another day, say) stands in
-- two partitions; only the newest load's version is current. The build's lake view leaves
-- out the older ones (pipeline.warehouse.lakeviews.superseded_receipts: it knows every
-- partition, while a build computes a batch of them), and the test
-- one_version_per_receipt of fct_receipts (marts/schema.yml) holds it to that.
select * from renamed
