// Job, run and node states as the REST API spells them, and how they are drawn (U-39).

export const JOB_STATES = [
  "SCHEDULED",
  "QUEUED",
  "RUNNING",
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "STALLED",
] as const;

export const RUN_STATES = ["RUNNING", "COMPLETED", "FAILED", "CANCELLED"] as const;

const JOB_ACTIVE = new Set(["SCHEDULED", "QUEUED", "RUNNING"]);

/** True while a job can still change on its own (live updates poll only then). */
export function isJobActive(state: string): boolean {
  return JOB_ACTIVE.has(state);
}

/** True while a run can still change on its own. */
export function isRunActive(state: string): boolean {
  return state === "RUNNING";
}

export interface StateLook {
  label: string;
  tone: "yellow" | "blue" | "green" | "red" | "grey" | "purple" | "muted" | "plain";
  pulse: boolean;
}

const LOOKS: Record<string, StateLook> = {
  SCHEDULED: { label: "Scheduled", tone: "yellow", pulse: false },
  QUEUED: { label: "Queued", tone: "yellow", pulse: false },
  RUNNING: { label: "Running", tone: "blue", pulse: true },
  COMPLETED: { label: "Completed", tone: "green", pulse: false },
  FAILED: { label: "Failed", tone: "red", pulse: false },
  CANCELLED: { label: "Cancelled", tone: "grey", pulse: false },
  STALLED: { label: "Stalled", tone: "purple", pulse: false },
  PENDING: { label: "Pending", tone: "muted", pulse: false },
  SKIPPED: { label: "Skipped", tone: "grey", pulse: false },
};

/** U-39: icon tone and label per state; unknown states show the raw string. */
export function stateLook(state: string): StateLook {
  return LOOKS[state] ?? { label: state, tone: "plain", pulse: false };
}
