-- Money in the marts and reports has two types (docs/warehouse.md, "Money"):
--   exact        DECIMAL(38,8): as the POS sent it, or computed from it without rounding;
--   to the cent  DECIMAL(18,2): rounded commercially (half away from zero) from an exact
--                sum, never a sum of rounded parts; or whole cents at the source.
-- DuckDB's round() on a DECIMAL rounds half away from zero; pipeline.core.money.round_cent does
-- the same in Python, so the CLI and the warehouse never disagree by a cent.

-- An amount in EUR, exact.
create or replace macro exact_amount(amount) as cast(amount as decimal(38, 8));

-- An amount in EUR rounded to the cent.
create or replace macro round_cent(amount) as cast(round(amount, 2) as decimal(18, 2));

-- An amount as a whole number of cents (rounded as round_cent() does), for exact allocation.
create or replace macro to_cent_units(amount) as cast(round(amount, 2) * 100 as hugeint);

-- Whole cents back to an amount.
create or replace macro from_cent_units(units) as cast(units * 0.01 as decimal(18, 2));

-- A line amount (DECIMAL(38,8)) as an integer weight, for proportional allocation.
create or replace macro to_weight(amount) as cast(amount * 100000000 as hugeint);

-- Integer division rounded down (DuckDB's // truncates towards zero).
create or replace macro floor_div(n, d) as
    (n // d) - case when n % d <> 0 and ((n < 0) <> (d < 0)) then 1 else 0 end;

-- Integer division rounded half away from zero; d > 0.
create or replace macro round_div(n, d) as
    sign(n) * ((abs(n) * 2 + d) // (2 * d));

-- The whole-cent floor of a share of `amount` cents in proportion weight / total_weight;
-- with a total weight of 0 the first share (rank 1) takes all.
create or replace macro share_floor(amount, weight, total_weight, share_rank) as
    case
        when total_weight = 0 then case when share_rank = 1 then amount else 0 end
        else floor_div(amount * weight, total_weight)
    end;

-- What share_floor left over, comparable between the shares of one amount (larger first
-- gets one of the remaining cents: the largest-remainder method).
create or replace macro share_remainder(amount, weight, total_weight, share_floor) as
    case
        when total_weight = 0 then 0
        else (amount * weight - share_floor * total_weight) * sign(total_weight)
    end;

-- The net part of a gross amount in cents at a tax rate in percent, rounded half away
-- from zero; the VAT is the rest, so net + VAT = gross exactly.
create or replace macro net_of_gross_cents(gross_units, rate_percent) as
    round_div(gross_units * 10000, 10000 + cast(rate_percent * 100 as hugeint));
