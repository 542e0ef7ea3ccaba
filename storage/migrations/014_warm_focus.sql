-- Whether a warm-started search skipped MetaSchedule's blind first pass over the tasks the warm
-- start measured (tasks.schedulers, focus): true for warm starts since 2026-11-25, false where a
-- warm start was followed by the blind pass, NULL without a warm start or before this column.
ALTER TABLE tuning_runs ADD COLUMN warm_focus BOOLEAN;
