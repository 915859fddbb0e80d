// Settings kept in the browser: refresh interval (U-13) and column visibility (U-23).

export const REFRESH_OPTIONS: { label: string; ms: number }[] = [
  { label: "Off", ms: 0 },
  { label: "1s", ms: 1_000 },
  { label: "3s", ms: 3_000 },
  { label: "10s", ms: 10_000 },
  { label: "30s", ms: 30_000 },
  { label: "1m", ms: 60_000 },
];

// U-13: 3 s matches the projection lag of the read model.
export const DEFAULT_REFRESH_MS = 3_000;
export const REFRESH_KEY = "tsumugi:refresh";
export const COLUMNS_KEY = "tsumugi:columns";

export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** U-13: a missing, empty or unlisted stored value falls back to 3000 ms. */
export function parseRefresh(stored: string | null): number {
  if (stored === null || stored.trim() === "") return DEFAULT_REFRESH_MS;
  const ms = Number(stored);
  return REFRESH_OPTIONS.some((o) => o.ms === ms) ? ms : DEFAULT_REFRESH_MS;
}

export function refreshLabel(ms: number): string {
  return REFRESH_OPTIONS.find((o) => o.ms === ms)?.label ?? `${ms} ms`;
}

export type ColumnKey = "id" | "startedAt" | "updatedAt" | "attempts" | "processingTime";

export const TOGGLE_COLUMNS: { key: ColumnKey; label: string }[] = [
  { key: "id", label: "ID" },
  { key: "startedAt", label: "Started at" },
  { key: "updatedAt", label: "Updated at" },
  { key: "attempts", label: "Attempts" },
  { key: "processingTime", label: "Processing time" },
];

export type ColumnVisibility = Record<ColumnKey, boolean>;

/** U-23: missing keys default to visible; an unparsable value makes every column visible. */
export function parseColumns(stored: string | null): ColumnVisibility {
  const visible: ColumnVisibility = {
    id: true,
    startedAt: true,
    updatedAt: true,
    attempts: true,
    processingTime: true,
  };
  if (stored === null) return visible;
  let parsed: unknown;
  try {
    parsed = JSON.parse(stored);
  } catch {
    return visible;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return visible;
  for (const { key } of TOGGLE_COLUMNS) {
    const value = (parsed as Record<string, unknown>)[key];
    if (typeof value === "boolean") visible[key] = value;
  }
  return visible;
}

/** U-13: storage failures (private mode, quota) are ignored. */
export function readSetting(store: KeyValueStore | undefined, key: string): string | null {
  try {
    return store?.getItem(key) ?? null;
  } catch {
    return null;
  }
}

export function writeSetting(store: KeyValueStore | undefined, key: string, value: string): void {
  try {
    store?.setItem(key, value);
  } catch {
    // U-13: ignored on purpose.
  }
}

/** U-7: the session cookie that carries the token; the server never percent-decodes it. */
export function tokenCookieString(cookieName: string, token: string): string {
  return `${cookieName}=${encodeURIComponent(token)}; path=/; SameSite=Strict`;
}
