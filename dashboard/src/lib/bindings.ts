// Bindings tab logic (J-176, J-185): reading diagnostics and building policy changes.
import type { BindingDiagnostics } from "./types";

export interface KnownPolicy {
  paused?: boolean;
  concurrency?: number;
}

/** J-149b: the pause may be reported at the top level or inside `blocked`. */
export function isPaused(diag: BindingDiagnostics, known: KnownPolicy | undefined): boolean {
  return diag.paused === true || diag.blocked?.paused === true || known?.paused === true;
}

/** Which limits stopped the last tick, plus a pause known from diagnostics or the last answer. */
export function blockedReasons(diag: BindingDiagnostics, known?: KnownPolicy): string[] {
  const reasons: string[] = [];
  if (isPaused(diag, known)) reasons.push("paused");
  if (diag.blocked?.capacity) reasons.push("capacity");
  if (diag.blocked?.tokens) reasons.push("rate");
  if (diag.blocked?.perKey) reasons.push("per key");
  return reasons;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * J-176: the answer carries the resulting settings (`{"ok", "settings": {"policy": {...}}, "shards"}`);
 * read the two fields the tab shows from the innermost policy object found.
 */
export function policyFromResponse(body: unknown): KnownPolicy {
  const record = asRecord(body);
  if (record === undefined) return {};
  const settings = asRecord(record.settings);
  const source = asRecord(settings?.policy) ?? asRecord(record.policy) ?? settings ?? record;
  const known: KnownPolicy = {};
  if (typeof source.paused === "boolean") known.paused = source.paused;
  if (typeof source.concurrency === "number") known.concurrency = source.concurrency;
  return known;
}

/** J-176: concurrency must be an integer >= 0; returns an error text or the body. */
export function concurrencyBody(field: string | number): { error: string } | { body: { concurrency: number } } {
  const text = String(field).trim(); // v-model gives a number input's value as a number once it parses
  const value = Number(text);
  if (text === "" || !Number.isInteger(value) || value < 0) {
    return { error: "Concurrency must be a whole number, 0 or more" };
  }
  return { body: { concurrency: value } };
}
