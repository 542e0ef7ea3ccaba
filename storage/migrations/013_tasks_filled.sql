-- Tasks a search left with no valid measurement (a deadline or a search error cut it short),
-- each then given the cost model's top pick, measured, before compiling (tasks.instant.
-- fill_unmeasured); 0 where the search measured every task, NULL in runs before this column.
ALTER TABLE tuning_runs ADD COLUMN tasks_filled INTEGER;
