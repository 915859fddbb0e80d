// REST wire shapes the dashboard reads (api.md Part A). Field names are the server's, unchanged.

export interface JobSummary {
  id: string;
  binding: string;
  state: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  created_at: number;
  updated_at: number;
  dispatched_at: number | null;
  retryable: boolean;
}

export interface AttemptRecord {
  attempt: number;
  state: string;
  started_at: number | null;
  finished_at: number;
  error: string | null;
}

export interface JobDetail extends JobSummary {
  concurrency_key: string | null;
  unique_key: string | null;
  guarantee: string;
  run_after: number | null;
  progress: number | null;
  payload: string;
  result: string | null;
  attempts_log: AttemptRecord[];
}

export interface RunSummary {
  id: string;
  flow: string;
  state: string;
  node_total: number;
  node_done: number;
  node_failed: number;
  created_at: number;
  updated_at: number;
}

export interface RunDetail extends RunSummary {
  input: string;
  parent_run_id: string | null;
  parent_node_id: string | null;
  retryable: boolean;
}

export interface RunNode {
  id: string;
  binding: string;
  state: string;
  container: boolean;
  parent: string | null;
  origin: string;
  after: string[];
  job_id: string | null;
  child_run_id: string | null;
  result: string | null;
  error: string | null;
  position: number;
  created_at: number;
  updated_at: number;
  /** ADR-0147: what a sleep or wait-for-event node waits for; null (or absent) for other nodes. */
  wait?: "sleep" | "event" | null;
  wait_event?: string | null;
  /** Epoch ms when a sleep ends or a wait for an event gives up. */
  wake_at?: number | null;
}

export interface Schedule {
  name: string;
  kind: "job" | "flow";
  target: string;
  every_ms: number | null;
  cron: string | null;
  overlap: string;
  next_run_at: number;
  last_run_at: number | null;
  last_fired_at: number | null;
  last_job_id: string | null;
  last_run_id: string | null;
  last_skipped_at: number | null;
  skipped_count: number;
  last_error: string | null;
}

export interface BindingMetrics {
  binding: string;
  total: number;
  failed: number;
  failureRate: number;
  avgDurationMs: number;
  maxDurationMs: number;
  p95DurationMs: number;
  avgAttempts: number;
}

export interface MetricsPoint {
  at: number | null;
  total: number;
  failed: number;
  avgDurationMs: number;
}

export interface BindingDiagnostics {
  active: number;
  outbox: number;
  paused?: boolean;
  blocked: { capacity: boolean; tokens: boolean; perKey: boolean; paused?: boolean };
}

export interface BulkResult {
  ok: string[];
  failed: { id: string; reason: string }[];
  remaining: number;
}
