-- Of measure_s, the wall seconds spent compiling candidates (the rest ran them on the target):
-- where a tuning run's measuring goes. NULL for runs recorded before this column.
ALTER TABLE tuning_runs ADD COLUMN build_s DOUBLE;
