// Number and time formatting shared by every screen (U-16, U-31, U-40, U-41).

/** U-31: dates use the browser's locale; null or undefined render as "-". */
export function formatTime(ms: number | null | undefined, locale?: string): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "-";
  return new Date(ms).toLocaleString(locale);
}

function oneDecimal(value: number): string {
  return value.toFixed(1).replace(/\.0$/, "");
}

/** U-40: >= 1 h in hours, >= 1 min in minutes, else seconds; one decimal, trailing ".0" dropped. */
export function formatInterval(ms: number): string {
  const hourMs = 3_600_000;
  const minuteMs = 60_000;
  if (ms >= hourMs) return `${oneDecimal(ms / hourMs)}h`;
  if (ms >= minuteMs) return `${oneDecimal(ms / minuteMs)}m`;
  return `${oneDecimal(ms / 1000)}s`;
}

/** U-41: >= 1000 ms as "x.x s", else "n ms". */
export function formatDurationMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "-";
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms)} ms`;
}

/** U-16: processing time `updated_at - dispatched_at`, blank unless dispatched and positive. */
export function processingTime(dispatchedAt: number | null, updatedAt: number): string {
  if (dispatchedAt === null) return "";
  const elapsedMs = updatedAt - dispatchedAt;
  return elapsedMs > 0 ? `${elapsedMs} ms` : "";
}

/** U-41: failure rate as a percent with one decimal. */
export function formatPercent(ratio: number): string {
  return `${(ratio * 100).toFixed(1)}%`;
}

/** U-28: progress in [0,1] as a rounded percent, clamped. */
export function progressPercent(progress: number): number {
  return Math.round(Math.min(1, Math.max(0, progress)) * 100);
}

/** payload, result and input arrive as JSON text; show them pretty-printed when they parse. */
export function prettyJson(text: string | null | undefined): string {
  if (text === null || text === undefined) return "-";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** U-40: "+<delay>" when a schedule fired after its occurrence, else "". */
export function fireDelay(lastRunAt: number | null, lastFiredAt: number | null): string {
  if (lastRunAt === null || lastFiredAt === null || lastFiredAt <= lastRunAt) return "";
  return `+${formatInterval(lastFiredAt - lastRunAt)}`;
}
