-- A task whose design space gave fewer distinct candidates than a collect asked for, per
-- profile, sampling seed and space (tasks.collect.sample_task). Sampling is seeded, so asking
-- again for no more than `asked` would draw the same samples and find nothing new: the next
-- collect skips such a task. A lent GPU machine spent ~100 s of a 7-minute lease re-sampling
-- the tasks a presampled store had already exhausted (session 51).
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
