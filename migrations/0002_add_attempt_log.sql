-- D-2: attempt history, JSON array newest first; NULL when there is no stored history
ALTER TABLE job ADD COLUMN attempts_log TEXT;
