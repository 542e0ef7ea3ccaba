-- An asm model that re-ordered a retune's top picks by their compiled code before they were
-- measured (tasks/asm_rerank.py), the candidates it built for that and how long that took.
-- NULL: no re-ranking, or recorded before these columns.
ALTER TABLE tuning_runs ADD COLUMN rerank_model VARCHAR;
ALTER TABLE tuning_runs ADD COLUMN rerank_builds INTEGER;
ALTER TABLE tuning_runs ADD COLUMN rerank_build_s DOUBLE;
