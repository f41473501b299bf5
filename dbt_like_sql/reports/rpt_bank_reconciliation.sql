-- Did the money of each day arrive? Per location, business date and payment type: what
-- the POS took (a card type's batch, the cash the count moved to the bank), which bank
-- entry paid it and when, the fee, the difference and its reason; and every booked bank
-- entry of the accounts that pays nothing of the POS (a chargeback, something else).
--
-- Cards: a terminal cut settles the card payments since the cut before it (a batch, which
-- may span midnight), under the cut's business date; the card type's acquirer
-- (dim_bank_acquirers) pays it pays_after_days bank days later, less its fee, one credit
-- a pay day for all batches due then (a weekend's together). Cash: a deposit pays the
-- cash moved out before its day since the account's previous deposit (the first one:
-- the days before it whose cash adds up to it, else the week before it).
-- Reasons: matched (the contract's fee), fee (another fee, at most twice the contract's),
-- partial payout (less than that), missing (due by the last statement, not paid), not
-- yet due, short or over (a deposit against its days' cash), chargeback (an acquirer's
-- debit), unexpected (an entry that pays nothing of the POS).
with acquirers as (

    select * from dim_bank_acquirers

),

entries as (

    select * from fct_bank_entries
    where is_booked

),

statements_until as (

    select
        location_id,
        min(closing_date) as statements_from,
        max(closing_date) as statements_until

    from dim_bank_statements
    group by all

),

cuts as (

    select
        cuts.location_id,
        cuts.business_date,
        cuts.amount as terminal_cut_amount,
        receipts.receipted_at_utc as cut_at,
        lag(receipts.receipted_at_utc) over (
            partition by cuts.location_id order by receipts.receipted_at_utc
        ) as previous_cut_at

    from fct_cash_movements as cuts
    inner join fct_receipts as receipts
        on
        cuts.location_id = receipts.location_id
        and cuts.business_date = receipts.business_date
        and cuts.transaction_id = receipts.transaction_id
    where cuts.movement_kind = 'terminal_cut'

),

loaded as (

    select
        location_id,
        min(business_date) as first_loaded

    from cuts
    group by all

),

card_payments as (

    select
        payments.location_id,
        payments.payment_type_name,
        payments.payment_amount,
        receipts.receipted_at_utc

    from fct_receipt_payments as payments
    inner join fct_receipts as receipts
        on
        payments.location_id = receipts.location_id
        and payments.business_date = receipts.business_date
        and payments.transaction_id = receipts.transaction_id
    where payments.payment_type_name in (select acquirers.payment_type_name from acquirers)

),

batches as (

    select
        cuts.location_id,
        cuts.business_date,
        card_payments.payment_type_name,
        acquirers.acquirer_name,
        acquirers.fee_percent,
        acquirers.pays_after_days,
        min(cuts.terminal_cut_amount) as terminal_cut_amount,
        -- the first cut loaded: its batch began before the loaded days
        bool_or(cuts.previous_cut_at is null) as is_first_batch,
        sum(card_payments.payment_amount) as pos_amount,
        add_bank_days(cuts.business_date, acquirers.pays_after_days) as due_on

    from cuts
    inner join card_payments
        on
        cuts.location_id = card_payments.location_id
        and cuts.cut_at >= card_payments.receipted_at_utc
        and (
            cuts.previous_cut_at is null
            or cuts.previous_cut_at < card_payments.receipted_at_utc
        )
    inner join acquirers
        on card_payments.payment_type_name = acquirers.payment_type_name
    group by
        cuts.location_id,
        cuts.business_date,
        card_payments.payment_type_name,
        acquirers.acquirer_name,
        acquirers.fee_percent,
        acquirers.pays_after_days
    having sum(card_payments.payment_amount) <> 0

),

payouts as (

    select
        location_id,
        acquirer_name,
        booking_date as paid_on,
        sum(amount) as paid_amount,
        min(statement_id || '/' || entry_number) as bank_entry,
        min(bank_reference) as bank_reference

    from entries
    where acquirer_name is not null and amount > 0
    group by all

),

pay_days as (

    select
        location_id,
        acquirer_name,
        due_on,
        sum(pos_amount) as gross_amount,
        count(*) as batch_count,
        min(fee_percent) as fee_percent,
        min(pays_after_days) as pays_after_days,
        bool_or(is_first_batch) as has_first_batch

    from batches
    group by all

),

pay_days_matched as (

    select
        pay_days.*,
        payouts.paid_on,
        payouts.bank_entry,
        payouts.bank_reference,
        pay_days.gross_amount - payouts.paid_amount as fee_amount,
        round(pay_days.gross_amount * pay_days.fee_percent / 100, 2) as contract_fee_amount,
        case
            -- a pay day of the first loaded batch, or one that may pay batches cut before
            -- the first loaded day: they are not all loaded
            when
                pay_days.has_first_batch
                or pay_days.due_on
                <= add_bank_days(loaded.first_loaded, pay_days.pays_after_days)
                then 'not loaded'
            -- due before the first statement loaded: its payout is not loaded
            when pay_days.due_on < statements_until.statements_from then 'not loaded'
            when payouts.paid_amount is null and (
                    statements_until.statements_until is null
                    or pay_days.due_on > statements_until.statements_until
                ) then 'not yet due'
            when payouts.paid_amount is null then 'missing'
            when abs(
                    pay_days.gross_amount * pay_days.fee_percent / 100
                    - (pay_days.gross_amount - payouts.paid_amount)
                ) <= 0.01 * pay_days.batch_count then 'matched'
            when
                pay_days.gross_amount - payouts.paid_amount
                between 0 and 2 * pay_days.gross_amount * pay_days.fee_percent / 100
                then 'fee'
            else 'partial payout'
        end as reason

    from pay_days
    left join payouts
        on
        pay_days.location_id = payouts.location_id
        and pay_days.acquirer_name = payouts.acquirer_name
        and pay_days.due_on = payouts.paid_on
    left join statements_until
        on pay_days.location_id = statements_until.location_id
    left join loaded
        on pay_days.location_id = loaded.location_id

),

card_rows as (

    select
        batches.location_id,
        batches.business_date,
        batches.payment_type_name,
        batches.acquirer_name,
        batches.pos_amount,
        batches.terminal_cut_amount,
        pay_day.paid_on,
        pay_day.bank_entry,
        pay_day.bank_reference,
        pay_day.reason,
        case
            when pay_day.fee_amount is null then null
            when row_number() over same_pay_day = count(*) over whole_pay_day
                then pay_day.fee_amount - coalesce(sum(
                        round(batches.pos_amount * pay_day.fee_amount / pay_day.gross_amount, 2)
                    ) over (same_pay_day rows between unbounded preceding and 1 preceding), 0)
            else round(batches.pos_amount * pay_day.fee_amount / pay_day.gross_amount, 2)
        end as fee_amount,
        case
            when pay_day.reason in ('matched', 'fee', 'not loaded') then 0
            when pay_day.reason = 'partial payout'
                and row_number() over same_pay_day = count(*) over whole_pay_day
                then pay_day.fee_amount - pay_day.contract_fee_amount
            when pay_day.reason = 'partial payout' then 0
            else batches.pos_amount
        end as difference_amount

    from batches
    inner join pay_days_matched as pay_day
        on
        batches.location_id = pay_day.location_id
        and batches.acquirer_name = pay_day.acquirer_name
        and batches.due_on = pay_day.due_on
    window
        whole_pay_day as (
            partition by batches.location_id, batches.acquirer_name, batches.due_on
        ),
        same_pay_day as (
            whole_pay_day order by batches.business_date, batches.payment_type_name
        )

),

cash_days as (

    select
        location_id,
        business_date,
        -sum(amount) as pos_amount

    from fct_cash_movements
    where movement_kind = 'withdrawal' and is_cash_to_bank(fibu_account_nr)
    group by all

),

deposits as (

    select
        location_id,
        booking_date,
        amount as paid_amount,
        statement_id || '/' || entry_number as bank_entry,
        bank_reference,
        lag(booking_date) over (
            partition by location_id order by booking_date, statement_id, entry_number
        ) as previous_deposit_on

    from entries
    where is_cash_deposit

),

backwards as (
    select
        cash_days.location_id,
        cash_days.business_date,
        first_deposits.booking_date as deposit_on,
        sum(cash_days.pos_amount) over (
            partition by cash_days.location_id, first_deposits.booking_date
            order by cash_days.business_date desc
        ) as backwards_amount
    from cash_days
    inner join deposits as first_deposits
        on
        cash_days.location_id = first_deposits.location_id
        and first_deposits.previous_deposit_on is null
        and cash_days.business_date < first_deposits.booking_date
        and cash_days.business_date >= first_deposits.booking_date - 14
),

first_windows as (

    select
        deposits.location_id,
        deposits.booking_date,
        max(backwards.business_date) filter (
            where backwards.backwards_amount = deposits.paid_amount
        ) as window_start

    from deposits
    inner join backwards
        on
        deposits.location_id = backwards.location_id
        and deposits.booking_date = backwards.deposit_on
    group by deposits.location_id, deposits.booking_date, deposits.paid_amount

),

deposit_windows as (

    select
        deposits.*,
        coalesce(
            deposits.previous_deposit_on,
            first_windows.window_start,
            deposits.booking_date - 7
        ) as window_start,
        -- an account's first deposit whose days could not be found: it may pay days
        -- before the loaded ones
        deposits.previous_deposit_on is null
        and first_windows.window_start is null as is_unsure

    from deposits
    left join first_windows
        on
        deposits.location_id = first_windows.location_id
        and deposits.booking_date = first_windows.booking_date

),

cash_matched as (

    select
        cash_days.location_id,
        cash_days.business_date,
        cash_days.pos_amount,
        windows.booking_date as paid_on,
        windows.bank_entry,
        windows.bank_reference,
        windows.paid_amount,
        windows.is_unsure and windows.booking_date < loaded.first_loaded + 7 as is_before_loaded,
        statements_until.statements_from,
        statements_until.statements_until,
        sum(cash_days.pos_amount) over whole_deposit as window_amount,
        row_number() over same_deposit = count(*) over whole_deposit as is_last_day

    from cash_days
    left join deposit_windows as windows
        on
        cash_days.location_id = windows.location_id
        and cash_days.business_date >= windows.window_start
        and cash_days.business_date < windows.booking_date
    left join statements_until
        on cash_days.location_id = statements_until.location_id
    left join loaded
        on cash_days.location_id = loaded.location_id
    window
        whole_deposit as (partition by cash_days.location_id, windows.bank_entry),
        same_deposit as (whole_deposit order by cash_days.business_date)

),

cash_rows as (

    select
        location_id,
        business_date,
        'cash' as payment_type_name,
        cast(null as varchar) as acquirer_name,
        pos_amount,
        cast(null as decimal(38, 8)) as terminal_cut_amount,
        paid_on,
        bank_entry,
        bank_reference,
        case
            when bank_entry is null and (
                    statements_until is null or business_date >= statements_until - 7
                ) then 'not yet due'
            when bank_entry is null and business_date < statements_from then 'not loaded'
            when bank_entry is null then 'missing'
            when window_amount = paid_amount then 'matched'
            when is_before_loaded then 'not loaded'
            when is_last_day and paid_amount < window_amount then 'short'
            when is_last_day then 'over'
            else 'matched'
        end as reason,
        cast(null as decimal(38, 8)) as fee_amount,
        case
            when bank_entry is null and business_date < statements_from then 0
            when bank_entry is null then pos_amount
            when is_before_loaded then 0
            when is_last_day then window_amount - paid_amount
            else 0
        end as difference_amount

    from cash_matched

),

used as (

    select bank_entry from card_rows
    where bank_entry is not null
    union
    select bank_entry from cash_rows
    where bank_entry is not null

),

other_rows as (

    select
        entries.location_id,
        entries.booking_date as business_date,
        cast(null as varchar) as payment_type_name,
        entries.acquirer_name,
        cast(0 as decimal(38, 8)) as pos_amount,
        cast(null as decimal(38, 8)) as terminal_cut_amount,
        entries.booking_date as paid_on,
        entries.statement_id || '/' || entries.entry_number as bank_entry,
        entries.bank_reference,
        case
            when entries.acquirer_name is not null and entries.amount < 0
                then 'chargeback'
            -- a payout or deposit within a week of the first loaded day: it pays days
            -- before them
            when
                (entries.acquirer_name is not null or entries.is_cash_deposit)
                and entries.booking_date < loaded.first_loaded + 7
                then 'not loaded'
            else 'unexpected'
        end as reason,
        cast(null as decimal(38, 8)) as fee_amount,
        -entries.amount as difference_amount

    from entries
    left join loaded
        on entries.location_id = loaded.location_id
    where entries.statement_id || '/' || entries.entry_number not in (
            select used.bank_entry from used
        )

),

unioned as (

    select * from card_rows
    union all by name
    select * from cash_rows
    union all by name
    select * from other_rows

),

final as (

    select
        unioned.location_id,
        unioned.business_date,
        unioned.payment_type_name,
        unioned.acquirer_name,
        round_cent(unioned.pos_amount) as pos_amount,
        round_cent(unioned.terminal_cut_amount) as terminal_cut_amount,
        unioned.bank_entry,
        unioned.bank_reference,
        unioned.paid_on,
        round_cent(unioned.fee_amount) as fee_amount,
        round_cent(unioned.difference_amount) as difference_amount,
        unioned.reason,
        unioned.reason not in ('matched', 'fee', 'not loaded') as is_open,
        case when unioned.reason not in ('matched', 'fee', 'not loaded') then
                statements_until.statements_until - unioned.business_date
        end as days_open

    from unioned
    left join statements_until
        on unioned.location_id = statements_until.location_id

)

select * from final
