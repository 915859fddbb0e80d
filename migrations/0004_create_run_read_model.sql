-- D-4: the run and run-node read models
CREATE TABLE IF NOT EXISTS run (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,
  flow TEXT NOT NULL,
  state TEXT NOT NULL,
  input TEXT NOT NULL,
  node_total INTEGER NOT NULL,
  node_done INTEGER NOT NULL,
  node_failed INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS run_state ON run (state, updated_at);
CREATE INDEX IF NOT EXISTS run_flow ON run (flow, updated_at);
CREATE INDEX IF NOT EXISTS run_created ON run (created_at);
CREATE INDEX IF NOT EXISTS run_updated ON run (updated_at, id);
CREATE TABLE IF NOT EXISTS run_node (
  run_id TEXT NOT NULL,
  node_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  binding TEXT NOT NULL,
  state TEXT NOT NULL,
  container INTEGER NOT NULL,
  parent TEXT,
  origin TEXT NOT NULL,
  after TEXT NOT NULL,
  job_id TEXT,
  result TEXT,
  error TEXT,
  position INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, node_id)
);
CREATE INDEX IF NOT EXISTS run_node_run ON run_node (run_id, position);
