-- D-6: when a SCHEDULED job becomes eligible (NULL on rows projected before this migration)
ALTER TABLE job ADD COLUMN run_after INTEGER;
