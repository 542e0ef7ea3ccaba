-- Optuna search trials (copied from the study's own storage) and the model registry.

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
