-- Network tuning runs (the retune flow) and their tuning curves.

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
    scheduler           VARCHAR NOT NULL,     -- gradient | round-robin | gain
    trials_budget       INTEGER NOT NULL,
    minutes_budget      DOUBLE,
    flops_share         DOUBLE NOT NULL,
    population          INTEGER NOT NULL,     -- evolutionary search population per round
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
    created_at          TIMESTAMP NOT NULL DEFAULT current_timestamp
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
