// Which job actions are offered and why not (U-25, U-30), with cancel of running jobs from the newer
// release (A-45 superseded by J-135) and reschedule of scheduled jobs.
import type { JobSummary } from "./types";

export interface ActionState {
  enabled: boolean;
  reason: string;
}

export interface JobActions {
  retry: ActionState;
  cancel: ActionState;
  reschedule: ActionState;
}

export const GONE_REASON = "Removed from the coordinator after the retention period";
const CANCELLABLE = new Set(["SCHEDULED", "QUEUED", "RUNNING"]);

export function jobActions(job: Pick<JobSummary, "state" | "retryable">, gone: boolean, busy: boolean): JobActions {
  const retryOk = !busy && !gone && job.retryable !== false;
  const retryReason = gone || job.retryable === false ? GONE_REASON : "";
  return {
    retry: { enabled: retryOk, reason: retryOk ? "" : retryReason },
    cancel: CANCELLABLE.has(job.state) && !busy && !gone
      ? { enabled: true, reason: "" }
      : { enabled: false, reason: "Only scheduled, queued or running jobs can be cancelled" },
    reschedule: job.state === "SCHEDULED" && !busy && !gone
      ? { enabled: true, reason: "" }
      : { enabled: false, reason: "Only scheduled jobs can be rescheduled" },
  };
}

export function anyEnabled(actions: JobActions): boolean {
  return actions.retry.enabled || actions.cancel.enabled || actions.reschedule.enabled;
}

/** U-27: "<ok> accepted" plus ", <failed> refused" when some were refused. */
export function bulkMessage(accepted: number, refused: number): string {
  return refused > 0 ? `${accepted} accepted, ${refused} refused` : `${accepted} accepted`;
}

// Vue's v-model hands an <input type="number"> over as a number once it parses, and as text otherwise.
export type NumberField = string | number;

/** A number field's text, trimmed: "" when it is empty. */
export function fieldText(value: NumberField): string {
  return String(value).trim();
}

export interface RescheduleForm {
  mode: "delay" | "at";
  delayMs: NumberField;
  runAtLocal: string; // value of an <input type="datetime-local">
  priority: NumberField;
}

/** exactly one of runAt / delayMs, plus an optional priority. Returns an error text or the body. */
export function rescheduleBody(form: RescheduleForm): { error: string } | { body: Record<string, number> } {
  const body: Record<string, number> = {};
  if (form.mode === "delay") {
    const delayMs = Number(fieldText(form.delayMs));
    if (fieldText(form.delayMs) === "" || !Number.isFinite(delayMs) || delayMs < 0) {
      return { error: "Delay must be a number of milliseconds, 0 or more" };
    }
    body.delayMs = delayMs;
  } else {
    const runAt = new Date(form.runAtLocal).getTime();
    if (form.runAtLocal === "" || !Number.isFinite(runAt)) return { error: "Run at must be a date and time" };
    body.runAt = runAt;
  }
  if (fieldText(form.priority) !== "") {
    const priority = Number(fieldText(form.priority));
    if (!Number.isFinite(priority)) return { error: "Priority must be a number" };
    body.priority = priority;
  }
  return { body };
}

export interface NewJobForm {
  binding: string;
  payload: string;
  maxAttempts: NumberField;
  delayMs: NumberField;
  priority: NumberField;
  uniqueKey: string;
  concurrencyKey: string;
  debounceKey: string;
  debounceMs: NumberField;
  debounceMaxMs: NumberField;
}

/** U-32: only filled fields are sent; invalid JSON is caught before the request. */
export function newJobBody(form: NewJobForm): { error: string } | { body: Record<string, unknown> } {
  let payload: unknown;
  try {
    payload = JSON.parse(form.payload);
  } catch {
    return { error: "Payload must be valid JSON" };
  }
  const body: Record<string, unknown> = { binding: form.binding, payload };
  const numbers: [keyof NewJobForm, string][] = [
    ["maxAttempts", "maxAttempts"],
    ["delayMs", "delayMs"],
    ["priority", "priority"],
    ["debounceMs", "debounceMs"],
    ["debounceMaxMs", "debounceMaxMs"],
  ];
  for (const [field, key] of numbers) {
    const text = fieldText(form[field]);
    if (text !== "") body[key] = Number(text);
  }
  if (form.uniqueKey !== "") body.uniqueKey = form.uniqueKey;
  if (form.concurrencyKey !== "") body.concurrencyKey = form.concurrencyKey;
  if (form.debounceKey !== "") body.debounceKey = form.debounceKey; // ADR-0149
  return { body };
}

/** U-33: the new-run body; an empty id lets the server generate one. */
export function newRunBody(flow: string, input: string, id: string): { error: string } | { body: Record<string, unknown> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch {
    return { error: "Input must be valid JSON" };
  }
  const body: Record<string, unknown> = { flow, input: parsed };
  if (id.trim() !== "") body.id = id.trim();
  return { body };
}
