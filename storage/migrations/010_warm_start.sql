-- A retune may start its search from the cost model's top candidates per task, measured first
-- (tasks/tuning/run.py, --warm-start K): K per task, NULL where the search started cold.
ALTER TABLE tuning_runs ADD COLUMN warm_start INTEGER;
