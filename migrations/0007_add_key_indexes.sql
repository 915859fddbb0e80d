-- D-7: exact-match key searches stay index-backed (A-28)
CREATE INDEX IF NOT EXISTS job_unique_key ON job (unique_key, updated_at);
CREATE INDEX IF NOT EXISTS job_concurrency_key ON job (concurrency_key, updated_at);
