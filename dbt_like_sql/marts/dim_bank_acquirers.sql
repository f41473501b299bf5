-- The acquirers that pay out card sales, as configured ([[bank.acquirers]]): one row per
-- payment type an acquirer settles.
select * from configured_acquirers()
