-- The spec's revenue rules (2.2), written down once: every model and data check that needs
-- them calls these macros, and they stay in the warehouse for analysts to use too.

-- A settlement: a paid receipt, or the reversal of one.
create or replace macro is_settlement(transaction_type) as
    transaction_type in ('Abrechnen', 'RechnungZurückholen');

-- Revenue-effective: a settlement in the payment group 'Umsatzwirksam'. Turnover is the sum
-- of netAmount * quantity over the items of these receipts.
create or replace macro is_revenue_effective(payment_group_name, transaction_type) as
    payment_group_name = 'Umsatzwirksam' and is_settlement(transaction_type);

-- A line's amount (price times quantity) in a type that cannot overflow: the lake holds
-- DECIMAL(18,4), whose products need up to 28 integer digits; DECIMAL(38,8) holds 30, and
-- the extraction rejects a partition whose lines add up to 10^26 or more, so a sum over
-- up to 10,000 location-days still fits.
create or replace macro line_amount(amount, quantity) as
    cast(amount as decimal(38, 4)) * cast(quantity as decimal(38, 4));

-- A record of the cash book (spec 2.2's "other operational events"): a cash movement
-- (Kassabuch), a count of the drawer (Bargeldzählung), a card terminal's cut
-- (TerminalKassenschnitt). Not settlements: no revenue, no daily-close payments.
create or replace macro is_cash_record(transaction_type) as
    transaction_type in ('Kassabuch', 'Bargeldzählung', 'TerminalKassenschnitt');
