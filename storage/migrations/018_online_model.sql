-- A learned search's online model (models.ms_adapter): the measurements of a task at which it
-- weighed as much as the pre-trained model. NULL: none (MetaSchedule's XGB, instant tuning, or
-- a run recorded before this column).
ALTER TABLE tuning_runs ADD COLUMN online_half INTEGER;
