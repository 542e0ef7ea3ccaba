-- Views for the questions people ask the store (README "Querying the store"), and what the
-- resource-constraint rules dropped during a tuning run.

ALTER TABLE tuning_runs ADD COLUMN rejected_by_rules INTEGER;  -- candidates dropped unmeasured

-- One row per measurement, no network fan-out (v_measurements repeats a measurement for every
-- network that contains its task): safe to count.
CREATE VIEW v_candidate_measurements AS
SELECT h.name AS hardware, t.task_name, t.workload_hash, t.flops, c.candidate_id,
       c.design_space, m.mean_latency_s, t.flops / m.mean_latency_s / 1e9 AS gflops,
       m.error_kind, m.verified, m.build_s, m.tvm_version, m.flow_run_id, m.measured_at
FROM measurements m
JOIN candidates c USING (candidate_id)
JOIN tasks t ON t.task_id = c.task_id
JOIN hardware h ON h.hardware_id = c.hardware_id;

-- Per network and hardware: how well its tasks have been measured, and the best end-to-end
-- latency a retune reached (NULL until one ran).
CREATE VIEW v_best_latency AS
WITH task_best AS (
    SELECT c.task_id, c.hardware_id, min(m.mean_latency_s) AS best_s
    FROM measurements m JOIN candidates c USING (candidate_id)
    WHERE m.error_kind IS NULL GROUP BY ALL),
per_network AS (
    SELECT n.name AS network, h.name AS hardware, count(*) AS tasks_measured,
           sum(nt.weight * tb.best_s) AS sum_best_task_s
    FROM task_best tb
    JOIN network_tasks nt ON nt.task_id = tb.task_id
    JOIN networks n ON n.network_id = nt.network_id
    JOIN hardware h ON h.hardware_id = tb.hardware_id
    GROUP BY ALL),
tuned AS (
    SELECT network, hardware, min(tuned_latency_s) AS best_tuned_s,
           arg_min(cost_model, tuned_latency_s) AS best_cost_model,
           arg_min(tuning_id, tuned_latency_s) AS best_tuning_id, count(*) AS tuning_runs
    FROM tuning_runs GROUP BY ALL)
SELECT COALESCE(p.network, t.network) AS network, COALESCE(p.hardware, t.hardware) AS hardware,
       p.tasks_measured, p.sum_best_task_s, t.best_tuned_s, t.best_cost_model,
       t.best_tuning_id, COALESCE(t.tuning_runs, 0) AS tuning_runs
FROM per_network p FULL OUTER JOIN tuned t ON p.network = t.network AND p.hardware = t.hardware;

-- Registered models, best held-out top-1 first.
CREATE VIEW v_model_leaderboard AS
SELECT model_id, kind,
       CAST(data_spec_json->'$.hardware' AS VARCHAR[]) AS trained_on,
       TRY_CAST(metrics_json->>'peak1' AS DOUBLE) AS top1,
       TRY_CAST(metrics_json->>'peak5' AS DOUBLE) AS top5,
       TRY_CAST(metrics_json->>'pairwise' AS DOUBLE) AS pairwise,
       train_rows, train_s, study_name, trial_number, parent_model_id, created_at
FROM models
ORDER BY top1 DESC NULLS LAST, created_at DESC;

-- Every retune, newest first, with what it gained.
CREATE VIEW v_tuning_history AS
SELECT tuning_id, network, hardware, cost_model, scheduler, trials, trials_budget,
       minutes_budget, search_s, untuned_latency_s, tuned_latency_s,
       untuned_latency_s / tuned_latency_s AS speedup, estimated_latency_s,
       rejected_by_rules, tuned_functions, tir_functions, seed, tvm_version, created_at
FROM tuning_runs
ORDER BY created_at DESC;

-- Lineage: every model with each of its ancestors (depth 0 = itself), the data, split, study
-- and flow run that made each.
CREATE VIEW v_model_lineage AS
WITH RECURSIVE chain(model_id, ancestor_id, depth) AS (
    SELECT model_id, model_id, 0 FROM models
    UNION ALL
    SELECT chain.model_id, m.parent_model_id, chain.depth + 1
    FROM chain JOIN models m ON m.model_id = chain.ancestor_id
    WHERE m.parent_model_id IS NOT NULL)
SELECT chain.model_id, chain.depth, a.model_id AS ancestor, a.kind, a.data_spec_json,
       a.data_fingerprint, a.split_json, a.train_rows, a.study_name, a.trial_number,
       a.flow_run_id, a.created_at
FROM chain JOIN models a ON a.model_id = chain.ancestor_id;
