-- D-5: subflow links
ALTER TABLE run_node ADD COLUMN child_run_id TEXT;
ALTER TABLE run ADD COLUMN parent_run_id TEXT;
ALTER TABLE run ADD COLUMN parent_node_id TEXT;
