-- The current schema in full: what applying every migration in storage/migrations/ gives.
-- tests/storage/test_schema.py checks the two agree. Change both together.


CREATE SEQUENCE hardware_id_seq START 1;
CREATE SEQUENCE network_id_seq START 1;
CREATE SEQUENCE task_id_seq START 1;
CREATE SEQUENCE settings_id_seq START 1;
CREATE SEQUENCE candidate_id_seq START 1;
CREATE SEQUENCE measurement_id_seq START 1;

-- One row per hardware profile ever measured; a name never changes meaning (the store refuses
-- a profile whose target differs from the stored one).
CREATE TABLE hardware (
    hardware_id    INTEGER PRIMARY KEY DEFAULT nextval('hardware_id_seq'),
    name           VARCHAR NOT NULL UNIQUE,
    description    VARCHAR,
    target_json    VARCHAR NOT NULL,          -- TVM Target, JSON dict form
    target_kind    VARCHAR NOT NULL,          -- llvm, cuda, ...
    arch           VARCHAR,
    host           VARCHAR,                   -- machine whose worker measures it
    runner_json    VARCHAR NOT NULL,          -- {"kind": "local"} or an RPC tracker/key
    num_threads    INTEGER,
    features_json  VARCHAR NOT NULL,          -- hardware features by name
    feature_vector FLOAT[] NOT NULL,          -- same, in tasks.hardware.HARDWARE_FEATURE_NAMES order
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- A network at one batch size and input size (a zoo entry, or 'imported' for foreign tasks).
CREATE TABLE networks (
    network_id  INTEGER PRIMARY KEY DEFAULT nextval('network_id_seq'),
    name        VARCHAR NOT NULL,
    batch       INTEGER NOT NULL,
    input_size  INTEGER NOT NULL,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (name, batch, input_size)
);

-- A tuning task = one TIR workload, identified by MetaSchedule's structural hash.
CREATE TABLE tasks (
    task_id        INTEGER PRIMARY KEY DEFAULT nextval('task_id_seq'),
    workload_hash  VARCHAR NOT NULL UNIQUE,
    task_name      VARCHAR NOT NULL,
    flops          DOUBLE NOT NULL,
    mod_json       VARCHAR NOT NULL,          -- tvm.ir.save_json of the task's IRModule
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE network_tasks (
    network_id  INTEGER NOT NULL REFERENCES networks (network_id),
    task_id     INTEGER NOT NULL REFERENCES tasks (task_id),
    weight      INTEGER NOT NULL,             -- how often the network runs this task
    PRIMARY KEY (network_id, task_id)
);

-- How candidates were timed (tasks.hardware.MeasureSettings); 'imported' for foreign records.
CREATE TABLE measure_settings (
    settings_id    INTEGER PRIMARY KEY DEFAULT nextval('settings_id_seq'),
    settings_key   VARCHAR NOT NULL UNIQUE,
    settings_json  VARCHAR NOT NULL
);

-- A schedule of a task for one hardware profile (design spaces differ per target).
CREATE TABLE candidates (
    candidate_id   BIGINT PRIMARY KEY DEFAULT nextval('candidate_id_seq'),
    task_id        INTEGER NOT NULL REFERENCES tasks (task_id),
    hardware_id    INTEGER NOT NULL REFERENCES hardware (hardware_id),
    schedule_hash  VARCHAR NOT NULL,          -- structural hash of the scheduled module
    trace_json     VARCHAR NOT NULL,          -- MetaSchedule trace JSON (decisions included)
    design_space   INTEGER,
    sample_seed    BIGINT,
    source         VARCHAR NOT NULL,          -- sampled | tuning | imported
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (task_id, hardware_id, schedule_hash)
);

-- One measurement per candidate and settings; failures are rows too (error_kind not null).
CREATE TABLE measurements (
    measurement_id  BIGINT PRIMARY KEY DEFAULT nextval('measurement_id_seq'),
    candidate_id    BIGINT NOT NULL REFERENCES candidates (candidate_id),
    settings_id     INTEGER NOT NULL REFERENCES measure_settings (settings_id),
    run_secs        DOUBLE[],                 -- every repeat, seconds
    mean_latency_s  DOUBLE,                   -- mean of run_secs; NULL on error
    error_kind      VARCHAR CHECK (error_kind IN ('build_error', 'build_timeout', 'build_crash',
                        'run_error', 'run_timeout', 'run_crash', 'wrong_result')),
    error_msg       VARCHAR,
    verified        BOOLEAN,                  -- output compared with the unscheduled function's
    build_s         DOUBLE,
    run_wall_s      DOUBLE,
    tvm_version     VARCHAR NOT NULL,
    flow_run_id     VARCHAR,
    measured_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (candidate_id, settings_id),
    CHECK ((error_kind IS NULL) = (mean_latency_s IS NOT NULL))
);

-- Per-store features of a candidate, flattened row-major (n_stores x dim).
CREATE TABLE features (
    candidate_id  BIGINT NOT NULL REFERENCES candidates (candidate_id),
    extractor     VARCHAR NOT NULL,           -- e.g. per_store_feature_v1
    dim           INTEGER NOT NULL,
    n_stores      INTEGER NOT NULL,
    "values"      FLOAT[] NOT NULL,
    PRIMARY KEY (candidate_id, extractor)
);

-- Every flow run that wrote to the store, with its parameters (provenance).
CREATE TABLE runs (
    run_id            VARCHAR PRIMARY KEY,    -- the Prefect flow run id (or a uuid)
    flow              VARCHAR NOT NULL,
    parameters_json   VARCHAR NOT NULL,
    hardware          VARCHAR,
    host              VARCHAR,
    tvm_version       VARCHAR,
    tenforge_version  VARCHAR,
    started_at        TIMESTAMP NOT NULL DEFAULT current_timestamp,
    finished_at       TIMESTAMP,
    status            VARCHAR NOT NULL,       -- running | completed | failed
    summary_json      VARCHAR
);

-- Every trial of every search study, whatever its state (complete, pruned, failed).
CREATE TABLE search_trials (
    study_name     VARCHAR NOT NULL,
    trial_number   INTEGER NOT NULL,
    state          VARCHAR NOT NULL,          -- COMPLETE | PRUNED | FAIL
    family         VARCHAR,
    params_json    VARCHAR NOT NULL,
    values_json    VARCHAR,                   -- objective value(s), in the study's order
    metrics_json   VARCHAR,                   -- validation metrics, train time
    started_at     TIMESTAMP,
    finished_at    TIMESTAMP,
    flow_run_id    VARCHAR,
    PRIMARY KEY (study_name, trial_number)
);

-- Trained cost models saved as artifacts (folders), with their lineage.
CREATE TABLE models (
    model_id          VARCHAR PRIMARY KEY,
    kind              VARCHAR NOT NULL,
    path              VARCHAR NOT NULL,       -- artifact folder (model.json + weights)
    config_json       VARCHAR NOT NULL,
    data_spec_json    VARCHAR NOT NULL,       -- which data trained it (models.dataset.DataSpec)
    data_fingerprint  VARCHAR NOT NULL,       -- the exact training rows
    split_json        VARCHAR,                -- models.splits.SplitSpec
    train_rows        INTEGER,
    study_name        VARCHAR,                -- the search that chose it, if any
    trial_number      INTEGER,
    parent_model_id   VARCHAR,                -- fine-tuned from this model, if any
    metrics_json      VARCHAR,                -- held-out (test) metrics
    train_s           DOUBLE,
    flow_run_id       VARCHAR,
    tvm_version       VARCHAR,
    created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- One row per retune that finished tuning (failed ones stay in `runs` only, so a failure
-- never replaces the best result).
CREATE TABLE tuning_runs (
    tuning_id           VARCHAR PRIMARY KEY,  -- the retune's flow run id
    network             VARCHAR NOT NULL,
    batch_size          INTEGER NOT NULL,
    input_size          INTEGER NOT NULL,
    network_hash        VARCHAR NOT NULL,     -- structural hash of the imported Relax module
    hardware            VARCHAR NOT NULL,
    profile_hash        VARCHAR NOT NULL,     -- the profile's target, threads, features, settings
    cost_model          VARCHAR NOT NULL,     -- a registered model_id, or 'metaschedule-xgb'
    scheduler           VARCHAR NOT NULL,     -- gradient | round-robin | gain | dual
    trials_budget       INTEGER NOT NULL,
    minutes_budget      DOUBLE,
    flops_share         DOUBLE NOT NULL,
    population          INTEGER,              -- the population asked for (NULL: per round)
    seed                INTEGER NOT NULL,
    tasks_total         INTEGER NOT NULL,
    tasks_tuned         INTEGER NOT NULL,
    trials              INTEGER NOT NULL,     -- candidates measured
    errors              INTEGER NOT NULL,
    search_s            DOUBLE NOT NULL,
    estimated_latency_s DOUBLE,               -- sum of occurrences x best task latency (cold cache)
    untuned_latency_s   DOUBLE NOT NULL,      -- end to end, median
    tuned_latency_s     DOUBLE NOT NULL,      -- end to end, median
    tuned_run_secs      DOUBLE[] NOT NULL,
    tuned_functions     INTEGER NOT NULL,     -- TIR functions the database scheduled
    tir_functions       INTEGER NOT NULL,
    database_dir        VARCHAR NOT NULL,     -- MetaSchedule JSON database (the tuned schedules)
    tvm_version         VARCHAR NOT NULL,
    created_at          TIMESTAMP NOT NULL DEFAULT current_timestamp,
    rejected_by_rules   INTEGER,              -- candidates dropped unmeasured (tasks.constraints)
    stop_reason         VARCHAR,              -- trials | deadline | interrupt | exhausted | error
    measure_s           DOUBLE,               -- of search_s, building and running candidates
    search_threads      INTEGER,              -- threads of the evolutionary search
    search_population   INTEGER,              -- the population it used per round
    warm_start          INTEGER,              -- model-ranked candidates measured per task first
    graph               VARCHAR DEFAULT 'exported',  -- how the network was prepared (GRAPHS)
    trials_per_round    INTEGER,              -- asked per turn of a task (NULL: the default)
    tasks_filled        INTEGER,              -- unmeasured by the search, given the model's pick
    warm_focus          BOOLEAN,              -- a warm start's search skipped the blind pass
    search_cpu_s        DOUBLE,               -- this process's CPU seconds over search_s
    features_reused     BIGINT,               -- ranked candidates' features from the cache
    features_extracted  BIGINT,               -- and extracted (NULL: MetaSchedule's XGB)
    warm_samples        INTEGER,              -- a warm start ranked per task (NULL: none)
    build_s             DOUBLE,               -- of measure_s, compiling candidates
    online_half         INTEGER,              -- a learned search's online model weighed half
                                              -- at this many measurements a task (NULL: none)
    held_tasks          INTEGER,              -- heavy tasks' picks measured again before the
    held_changed        INTEGER,              -- build (tasks.tuning.hold), and of them changed
    hold_s              DOUBLE,               -- (NULL: not held; database_dir: the held one)
    hold_top            INTEGER,              -- records a heavy task may have held (0: no hold)
    online_blend        VARCHAR,              -- the online model weighed by count or
                                              -- prequential (NULL: no online model)
    rerank_model        VARCHAR,              -- an asm model re-ordered the picks by their
    rerank_builds       INTEGER,              -- code, building this many (tasks.asm_rerank)
    rerank_build_s      DOUBLE,               -- in this long (NULL: no re-ranking)
    builds_cut          INTEGER,              -- builds the run's build cap cut (NULL: no cap)
    tile_mix            DOUBLE                -- a learned search's share kept outside a task's
                                              -- dominant tile group (NULL: no mix)
);

-- Best-so-far after every measured batch of a tuning run.
CREATE TABLE tuning_curve (
    tuning_id           VARCHAR NOT NULL,
    point               INTEGER NOT NULL,
    trials              INTEGER NOT NULL,
    wall_s              DOUBLE NOT NULL,
    task_name           VARCHAR NOT NULL,     -- the task this batch measured
    task_best_s         DOUBLE,               -- its best latency so far (NULL: none valid yet)
    estimated_latency_s DOUBLE,               -- NULL until every tuned task has a valid one
    PRIMARY KEY (tuning_id, point)
);

-- The stable query surface: one row per measurement (per network the task belongs to).
CREATE VIEW v_measurements AS
SELECT h.name            AS hardware,
       n.name            AS network,
       t.task_name       AS task_name,
       t.workload_hash   AS workload_hash,
       c.candidate_id    AS candidate_id,
       m.mean_latency_s  AS mean_latency_s,
       m.error_kind      AS error_kind,
       m.measured_at     AS measured_at
FROM measurements m
JOIN candidates c USING (candidate_id)
JOIN tasks t ON t.task_id = c.task_id
JOIN hardware h ON h.hardware_id = c.hardware_id
LEFT JOIN network_tasks nt ON nt.task_id = t.task_id
LEFT JOIN networks n ON n.network_id = nt.network_id;

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
       rejected_by_rules, tuned_functions, tir_functions, seed, tvm_version, created_at,
       stop_reason, measure_s, search_threads,
       60 * trials / search_s AS trials_per_min
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

-- The fleet: shards that other machines exported, loaded into this store by `ingest`.
-- One row per shard, written in the same transaction as the shard's rows, so a shard is either
-- fully loaded and listed here or not at all (a killed ingest resumes with the next shard).
CREATE TABLE ingested_shards (
    manifest_sha256     VARCHAR PRIMARY KEY,  -- identity of the shard (its manifest names every
                                              -- file's checksum)
    shard               VARCHAR NOT NULL,     -- <profile>/<stem> as found
    source              VARCHAR NOT NULL,     -- the folder it was found in
    run_id              VARCHAR NOT NULL,     -- the collect run that measured it
    hardware            VARCHAR NOT NULL,
    host                VARCHAR,
    measured            INTEGER NOT NULL,
    measurements_added  INTEGER NOT NULL,     -- 0 when every row was already here
    ingested_at         TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- How well a model ranks one hardware profile's held-out tasks, measured (by transfer and
-- onboard: the parent as is and its fine-tuned child, on the same held-out tasks). Retune
-- picks the model with the best measured top-1 on its profile, so a fine-tuned model that
-- scored worse than its parent does not replace it.
CREATE TABLE model_evaluations (
    model_id            VARCHAR NOT NULL,
    hardware            VARCHAR NOT NULL,
    metrics_json        VARCHAR NOT NULL,     -- peak1, peak5, pairwise, ... on the held-out tasks
    test_tasks          INTEGER NOT NULL,
    split_json          VARCHAR,              -- which tasks were held out (split kind and seed)
    flow_run_id         VARCHAR,
    evaluated_at        TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Networks people bring (tasks/sources.py): a registered name, where it comes from, and what
-- it is. `tenforge networks add` registers one; a first use of a file registers it under its
-- file's name.
CREATE TABLE workloads (
    name                VARCHAR PRIMARY KEY,
    kind                VARCHAR NOT NULL,     -- factory | exported | onnx
    source              VARCHAR NOT NULL,     -- /abs/file.py:factory, /abs/file.pt2 or .onnx
    content_hash        VARCHAR NOT NULL,     -- sha256 of the file when last registered
    input_shapes_json   VARCHAR,              -- sizes given for dynamic dims: [[name, shape]]
    inputs_json         VARCHAR NOT NULL,     -- input signature: [{"shape", "dtype"}]
    tasks_json          VARCHAR NOT NULL,     -- its tuning tasks: [{task_name, workload_hash,
                                              --   flops, weight}] on target_json
    target_json         VARCHAR NOT NULL,
    registered_at       TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- A task whose design space gave fewer distinct candidates than a collect asked for (per
-- profile, seed and space): seeded sampling would find nothing new below `asked`, so the next
-- collect skips it (tasks.collect.sample_task; migration 020).
CREATE TABLE sampled_out (
    task_id     INTEGER NOT NULL,
    hardware_id INTEGER NOT NULL,
    seed        BIGINT NOT NULL,
    space       VARCHAR NOT NULL,   -- default | simt (collect --simt)
    asked       INTEGER NOT NULL,   -- distinct candidates asked for
    found       INTEGER NOT NULL,   -- distinct candidates the task had after sampling
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (task_id, hardware_id, seed, space)
);
