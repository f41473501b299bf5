-- The bank's side as bookings ([bank] book): what the DATEV and BMD files book besides
-- the daily closes. Per bank entry of a configured account, dated the day the bank booked
-- it, document B<location>-<YYYYMMDD> (the location's statement of that day):
--   payout      an acquirer's credit: bank to the card transit account its payment types'
--               payments were debited to, net of the fee
--   card_fee    the fee it kept: card fees to the same transit account (the contract's
--               fee where it paid less than that: the rest stays open in transit)
--   chargeback  an acquirer's debit: the card transit account to bank
--   deposit     a cash deposit: bank to the cash transit account
-- and per cash book record that moved cash to the bank (the till's side of a deposit),
-- dated its business date, document G<location>-<YYYYMMDD>:
--   cash_to_bank  the cash transit account to the cash account
-- A bank entry that is none of these (rent, a supplier) is not booked: the advisor books
-- it from the statement. So the transit accounts net to zero where the money arrived,
-- and what is open stays there, as rpt_bank_transit_monthly shows it.
with

entries as (

    select * from fct_bank_entries
    where is_booked and books_bank()

),

acquirers as (

    select * from dim_bank_acquirers

),

provisional_days as (

    select
        location_id,
        business_date
    from lake.revenue_loads
    where provisional

),

-- the account each payment type's payments are debited to (payment_account, the rule the
-- daily close books by), per location: the one of the most days, should a type post to two
-- (on a tie the lowest account: the same bookings on every build)
day_accounts as (

    select
        location_id,
        payment_type_name,
        payment_account(payment_type_id, payment_type_name, fibu_account_nr) as debit_account

    from rpt_daily_close_payments

),

type_accounts as (

    select
        location_id,
        payment_type_name,
        debit_account as transit_account

    from day_accounts
    group by location_id, payment_type_name, debit_account
    qualify row_number() over (
            partition by location_id, payment_type_name
            order by count(*) desc, debit_account
        ) = 1

),

-- an acquirer's account for what no batch explains (a chargeback): the one most of the
-- types it pays post to, on a tie the lowest
acquirer_accounts as (

    select
        type_accounts.location_id,
        acquirers.acquirer_name,
        type_accounts.transit_account

    from type_accounts
    inner join acquirers
        on type_accounts.payment_type_name = acquirers.payment_type_name
    group by
        type_accounts.location_id, acquirers.acquirer_name, type_accounts.transit_account
    qualify row_number() over (
            partition by type_accounts.location_id, acquirers.acquirer_name
            order by count(*) desc, type_accounts.transit_account
        ) = 1

),

cash_accounts as (

    select
        location_id,
        debit_account as cash_account

    from day_accounts
    where is_cash_payment(payment_type_name)
    group by location_id, debit_account
    qualify row_number() over (
            partition by location_id order by count(*) desc, debit_account
        ) = 1

),

acquirer_entries as (

    select * from entries
    where acquirer_name is not null

),

bank_locations as (

    select distinct location_id
    from dim_bank_statements

),

-- what a payout settled of the batches it paid, per transit account: the batches' sales
-- less what stays open of them (a partial payout's shortfall)
settled as (

    select
        reconciliation.bank_entry,
        coalesce(type_accounts.transit_account, booking_account('card_transit'))
            as transit_account,
        sum(reconciliation.pos_amount - reconciliation.difference_amount) as settled_amount,
        sum(reconciliation.fee_amount - reconciliation.difference_amount) as fee_amount

    from rpt_bank_reconciliation as reconciliation
    left join type_accounts
        on
        reconciliation.location_id = type_accounts.location_id
        and reconciliation.payment_type_name = type_accounts.payment_type_name
    where reconciliation.reason in ('matched', 'fee', 'partial payout')
    group by all

),

split as (

    select
        settled.*,
        sum(settled.settled_amount) over whole_entry as entry_settled_amount,
        sum(settled.fee_amount) over whole_entry as entry_fee_amount,
        row_number() over same_entry = count(*) over whole_entry as is_last

    from settled
    window
        whole_entry as (partition by settled.bank_entry),
        same_entry as (whole_entry order by settled.transit_account)

),

split_fees as (

    select
        bank_entry,
        transit_account,
        settled_amount,
        case
            when is_last
                then entry_fee_amount - coalesce(sum(
                        round(entry_fee_amount * settled_amount / entry_settled_amount, 2)
                    ) over (
                        partition by bank_entry order by transit_account
                        rows between unbounded preceding and 1 preceding
                    ), 0)
            else round(entry_fee_amount * settled_amount / entry_settled_amount, 2)
        end as fee_amount

    from split

),

payouts as (

    select
        acquirer_entries.location_id,
        acquirer_entries.booking_date as business_date,
        acquirer_entries.statement_id || '/' || acquirer_entries.entry_number as bank_entry,
        acquirer_entries.statement_id,
        acquirer_entries.entry_number,
        bank_ledger_account(acquirer_entries.iban) as bank_account,
        coalesce(
            split_fees.transit_account,
            acquirer_accounts.transit_account,
            booking_account('card_transit')
        ) as transit_account,
        -- a payout matched to its batches: the settled sales less the fee; else the
        -- entry as it is
        coalesce(split_fees.settled_amount - split_fees.fee_amount, acquirer_entries.amount)
            as amount,
        coalesce(split_fees.fee_amount, 0) as fee_amount,
        acquirer_entries.acquirer_name

    from acquirer_entries
    left join split_fees
        on acquirer_entries.statement_id || '/' || acquirer_entries.entry_number
        = split_fees.bank_entry
    left join acquirer_accounts
        on
        acquirer_entries.location_id = acquirer_accounts.location_id
        and acquirer_entries.acquirer_name = acquirer_accounts.acquirer_name

),

payout_lines as (

    select
        location_id,
        business_date,
        bank_entry,
        statement_id,
        entry_number,
        1 as line_group,
        'payout' as booking_kind,
        bank_account as debit_account,
        'bank' as debit_role,
        transit_account as credit_account,
        'payment' as credit_role,
        amount,
        'Auszahlung ' || acquirer_name as booking_text

    from payouts
    where amount > 0

    union all

    select
        location_id,
        business_date,
        bank_entry,
        statement_id,
        entry_number,
        2 as line_group,
        'card_fee' as booking_kind,
        booking_account('card_fees') as debit_account,
        'card_fees' as debit_role,
        transit_account as credit_account,
        'payment' as credit_role,
        fee_amount as amount,
        'Kartengebühr ' || acquirer_name as booking_text

    from payouts
    where amount > 0

    union all

    select
        location_id,
        business_date,
        bank_entry,
        statement_id,
        entry_number,
        3 as line_group,
        'chargeback' as booking_kind,
        transit_account as debit_account,
        'payment' as debit_role,
        bank_account as credit_account,
        'bank' as credit_role,
        -amount as amount,
        'Rückbelastung ' || acquirer_name as booking_text

    from payouts
    where amount < 0

),

deposit_lines as (

    select
        entries.location_id,
        entries.booking_date as business_date,
        entries.statement_id || '/' || entries.entry_number as bank_entry,
        entries.statement_id,
        entries.entry_number,
        4 as line_group,
        'deposit' as booking_kind,
        bank_ledger_account(entries.iban) as debit_account,
        'bank' as debit_role,
        booking_account('cash_transit') as credit_account,
        'cash_transit' as credit_role,
        entries.amount,
        'Bareinzahlung' as booking_text

    from entries
    where entries.is_cash_deposit

),

entry_lines as (

    select * from payout_lines
    union all by name
    select * from deposit_lines

),

bank_lines as (

    select
        *,
        'B' || location_id || '-' || strftime(business_date, '%Y%m%d') as document_number,
        cast(null as varchar) as transaction_id

    from entry_lines

),

-- the till's side of a deposit: the cash it moved out for the bank (Geldtransit); the
-- bank's side books the cash transit account off when the deposit arrives
till_lines as (

    select
        movements.location_id,
        movements.business_date,
        cast(null as varchar) as bank_entry,
        cast(null as varchar) as statement_id,
        cast(null as integer) as entry_number,
        5 as line_group,
        'cash_to_bank' as booking_kind,
        booking_account('cash_transit') as debit_account,
        'cash_transit' as debit_role,
        coalesce(cash_accounts.cash_account, booking_account('cash')) as credit_account,
        'cash' as credit_role,
        -movements.amount as amount,
        'Geldtransit Kasse an Bank' as booking_text,
        'G' || movements.location_id || '-' || strftime(movements.business_date, '%Y%m%d')
            as document_number,
        movements.transaction_id

    from fct_cash_movements as movements
    left join cash_accounts
        on movements.location_id = cash_accounts.location_id
    anti join provisional_days
        on
        movements.location_id = provisional_days.location_id
        and movements.business_date = provisional_days.business_date
    where
        books_bank()
        and movements.movement_kind = 'withdrawal'
        and is_cash_to_bank(movements.fibu_account_nr)
        -- only where the location's bank statements are loaded: its deposits are booked
        and movements.location_id in (select bank_locations.location_id from bank_locations)

),

lines as (

    select * from bank_lines
    union all by name
    select * from till_lines

),

final as (

    select
        location_id,
        business_date,
        document_number,
        row_number() over (
            partition by document_number
            order by
                statement_id, entry_number, transaction_id, line_group, debit_account,
                credit_account, amount
        ) as booking_number,
        debit_account,
        debit_role,
        credit_account,
        credit_role,
        cast(amount as decimal(18, 2)) as amount,
        booking_kind,
        booking_text,
        bank_entry,
        transaction_id

    from lines
    where amount <> 0

)

select * from final
