-- How a retune prepared its network's graph before tuning (tasks/workloads.py GRAPHS):
-- exported (as before), folded (weight-only work done once, at load), nhwc. `tenforge
-- compile` imports the network the same way to apply the run's schedules.
ALTER TABLE tuning_runs ADD COLUMN graph VARCHAR DEFAULT 'exported';
