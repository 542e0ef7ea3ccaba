-- Why a retune's search ended: its trial budget, its wall-clock deadline, an interrupt
-- (SIGTERM / Ctrl-C: the run still compiles and records what it found), or every task
-- exhausted its design space before the budget.
ALTER TABLE tuning_runs ADD COLUMN stop_reason VARCHAR;  -- trials | deadline | interrupt | exhausted

CREATE OR REPLACE VIEW v_tuning_history AS
SELECT tuning_id, network, hardware, cost_model, scheduler, trials, trials_budget,
       minutes_budget, search_s, untuned_latency_s, tuned_latency_s,
       untuned_latency_s / tuned_latency_s AS speedup, estimated_latency_s,
       rejected_by_rules, tuned_functions, tir_functions, seed, tvm_version, created_at,
       stop_reason
FROM tuning_runs
ORDER BY created_at DESC;
