-- Where a search's time went beyond wall clock: the tuning process's CPU seconds over the search
-- (candidates are built and run in worker processes, so this is the search's own work, blind to
-- other load), and how many ranked candidates' features the learned cost model's cache reused
-- or extracted (models/feature_cache.py; NULL with MetaSchedule's XGB or before this column).
ALTER TABLE tuning_runs ADD COLUMN search_cpu_s DOUBLE;
ALTER TABLE tuning_runs ADD COLUMN features_reused BIGINT;
ALTER TABLE tuning_runs ADD COLUMN features_extracted BIGINT;
