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
