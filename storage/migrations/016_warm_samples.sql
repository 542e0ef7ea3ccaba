-- Sampled candidates a warm start ranked per task before measuring its top --warm-start K
-- (retune --warm-samples; 256 before this column, when it was fixed). NULL without a warm start.
ALTER TABLE tuning_runs ADD COLUMN warm_samples INTEGER;
