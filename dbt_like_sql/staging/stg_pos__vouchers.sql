with

source as (

    select * from lake.vouchers

),

renamed as (

    select
        cast(snapshot_date as date) as snapshot_date,
        voucher_id,
        voucher_code,
        category_id as voucher_category_id,
        category_name as voucher_category_name,
        amount_cents,
        balance_cents,
        max_amount_cents,
        code_id,
        starts_at,
        expires_at,
        is_enabled,
        comment,
        category_redemption_cap as voucher_category_redemption_cap,
        category_payment_provider_id as voucher_category_payment_provider_id,
        created_at,
        discriminator

    from source

),

deduplicated as (

    select *
    from renamed
    qualify row_number() over (partition by snapshot_date, voucher_id order by voucher_code) = 1

)

select * from deduplicated
