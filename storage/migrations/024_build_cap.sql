-- Builds a retune's build cap cut (tasks/measure/build_cap.py: a build far slower than the
-- run's others is not waited for). NULL: no cap, or recorded before this column.
ALTER TABLE tuning_runs ADD COLUMN builds_cut INTEGER;
