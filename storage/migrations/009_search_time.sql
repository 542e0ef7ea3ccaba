-- Where a retune's time went: of search_s, how long building and running candidates took (the
-- rest is MetaSchedule's evolutionary search and the cost model), the threads the search ran
-- on (measuring never overlaps it, so it may use every core), and the population it used:
-- `population` is what was asked (NULL: chosen per round, tasks/tuning/contexts.py).
ALTER TABLE tuning_runs ADD COLUMN measure_s DOUBLE;
ALTER TABLE tuning_runs ADD COLUMN search_threads INTEGER;
ALTER TABLE tuning_runs ADD COLUMN search_population INTEGER;
ALTER TABLE tuning_runs ALTER COLUMN population DROP NOT NULL;

CREATE OR REPLACE VIEW v_tuning_history AS
SELECT tuning_id, network, hardware, cost_model, scheduler, trials, trials_budget,
       minutes_budget, search_s, untuned_latency_s, tuned_latency_s,
       untuned_latency_s / tuned_latency_s AS speedup, estimated_latency_s,
       rejected_by_rules, tuned_functions, tir_functions, seed, tvm_version, created_at,
       stop_reason, measure_s, search_threads,
       60 * trials / search_s AS trials_per_min
FROM tuning_runs
ORDER BY created_at DESC;
