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
