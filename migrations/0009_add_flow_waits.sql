-- ADR-0147: sleep and wait-for-event nodes: what the node waits for and when it stops waiting
ALTER TABLE run_node ADD COLUMN wait TEXT;
ALTER TABLE run_node ADD COLUMN wait_event TEXT;
ALTER TABLE run_node ADD COLUMN wake_at INTEGER;
