-- How many of a heavy task's best records the hold may measure again (retune --hold-top;
-- tasks.tuning.hold.HOLD_TOP by default, 0: no hold). NULL: recorded before this column.
-- A retune with another value is not skipped as unchanged: the build it makes can differ.
ALTER TABLE tuning_runs ADD COLUMN hold_top INTEGER;
