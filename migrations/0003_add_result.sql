-- D-3: JSON text of the performer's return value
ALTER TABLE job ADD COLUMN result TEXT;
