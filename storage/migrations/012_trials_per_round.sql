-- Candidates a retune asked to measure per turn of a task (--trials-per-round, MetaSchedule's
-- num_trials_per_iter); NULL: the default, what gives every task two turns of the budget
-- (4 to 64), as `population` NULL is the default population.
ALTER TABLE tuning_runs ADD COLUMN trials_per_round INTEGER;
