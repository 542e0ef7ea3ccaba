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
