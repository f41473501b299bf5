with

entries as (

    select * from stg_pos__menu_entries

),

categories as (

    select * from stg_pos__menu_categories

),

menus as (

    select * from stg_pos__menus

),

joined as (

    select
        entries.* replace (exact_amount(entries.price) as price),
        categories.category_name,
        categories.menu_key,
        menus.menu_name,
        menus.price_name

    from entries
    inner join categories
        on entries.location_id = categories.location_id
        and entries.snapshot_date = categories.snapshot_date
        and entries.category_key = categories.category_key
    inner join menus
        on categories.location_id = menus.location_id
        and categories.snapshot_date = menus.snapshot_date
        and categories.menu_key = menus.menu_key

),

final as (

    select *
    from joined
    qualify snapshot_date = max(snapshot_date) over (partition by location_id)

)

select * from final
