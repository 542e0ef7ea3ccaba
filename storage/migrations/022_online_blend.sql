-- How a learned search's online model was weighed per task (models.ms_adapter): "count" (by
-- online_half alone) or "prequential" (by the task's own measured batches,
-- models/online_blend.py). NULL: no online model, or recorded before this column.
ALTER TABLE tuning_runs ADD COLUMN online_blend VARCHAR;
