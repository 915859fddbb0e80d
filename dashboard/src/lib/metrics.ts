// Metrics chart geometry (U-41): bar heights relative to the busiest hour, failed share inside.
import type { MetricsPoint } from "./types";

export const METRIC_WINDOWS = [
  { label: "24h", hours: 24 },
  { label: "7d", hours: 168 },
  { label: "30d", hours: 720 },
];

export interface Bar {
  at: number | null;
  total: number;
  failed: number;
  /** Height of the bar as a share of the tallest one, in [0, 1]. */
  height: number;
  /** Share of the bar that failed, in [0, 1]. */
  failedShare: number;
}

export function chartBars(series: readonly MetricsPoint[]): Bar[] {
  const max = series.reduce((m, p) => Math.max(m, p.total), 0);
  return series.map((p) => ({
    at: p.at,
    total: p.total,
    failed: p.failed,
    height: max > 0 ? p.total / max : 0,
    failedShare: p.total > 0 ? Math.min(1, p.failed / p.total) : 0,
  }));
}
