-- A learned search's tile mix (retune --tile-mix; models/tile_mix.py): the share of a task's
-- measurements kept outside the innermost tile factor it measured most. NULL: no mix, or
-- recorded before this column. A retune with another value is not skipped as unchanged.
ALTER TABLE tuning_runs ADD COLUMN tile_mix DOUBLE;
