-- Bank days: Monday to Friday (the sandbox's bank and acquirers keep no holidays; a real
-- one's holiday moves a payout a day later, which the reconciliation shows as missing
-- until the next statement pays it).

-- The first bank day after a date.
create or replace macro next_bank_day(d) as
    cast(d as date)
    + cast(case isodow(cast(d as date)) when 5 then 3 when 6 then 2 else 1 end as integer);

-- The n-th bank day after a date (n from 0 to 5): the next bank day, n times, as an
-- acquirer counts the days to a batch's payout (a Friday's, Saturday's and Sunday's
-- batches all land on the same day).
create or replace macro add_bank_days(d, n) as
    case n
        when 0 then cast(d as date)
        when 1 then next_bank_day(d)
        when 2 then next_bank_day(next_bank_day(d))
        when 3 then next_bank_day(next_bank_day(next_bank_day(d)))
        when 4 then next_bank_day(next_bank_day(next_bank_day(next_bank_day(d))))
        when 5 then next_bank_day(next_bank_day(next_bank_day(next_bank_day(next_bank_day(d)))))
    end;
