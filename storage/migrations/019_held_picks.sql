-- Before compiling, the heaviest tasks' picks measured again in fresh processes
-- (tasks.tuning.hold): how many tasks were, how many changed pick, and the seconds it took.
-- database_dir is then the held database (one record per task) the build used. NULL: not held
-- (an interrupt, tune_network(hold_top=0), or a run recorded before these columns).
ALTER TABLE tuning_runs ADD COLUMN held_tasks INTEGER;
ALTER TABLE tuning_runs ADD COLUMN held_changed INTEGER;
ALTER TABLE tuning_runs ADD COLUMN hold_s DOUBLE;
