// Jobs-table state as pure functions: sorting (U-18), paging (U-21, U-22), filters and the query (U-15, U-19).
import { type ParsedSearch, searchParams } from "./search";

export type SortColumn = "updated_at" | "created_at" | "binding" | "state" | "priority" | "attempts";
export type SortOrder = "asc" | "desc";

export interface SortState {
  column: SortColumn;
  order: SortOrder;
}

export const INITIAL_SORT: SortState = { column: "updated_at", order: "desc" };
export const PAGE_SIZES = [10, 20, 30, 50] as const;
export const DEFAULT_PAGE_SIZE = 20;

/** U-18: the current column flips direction; another column starts descending. */
export function toggleSort(current: SortState, column: SortColumn): SortState {
  if (current.column === column) {
    return { column, order: current.order === "desc" ? "asc" : "desc" };
  }
  return { column, order: "desc" };
}

/** U-18: the icon shown in a sortable header. */
export function sortIcon(current: SortState, column: SortColumn): "none" | "down" | "up" {
  if (current.column !== column) return "none";
  return current.order === "desc" ? "down" : "up";
}

/** U-22: Y = max(1, ceil(total / size)). */
export function pageCount(total: number, pageSize: number): number {
  return Math.max(1, Math.ceil(total / pageSize));
}

/** Keeps a page index inside the list after the total shrank. */
export function clampPage(page: number, total: number, pageSize: number): number {
  return Math.min(Math.max(0, page), pageCount(total, pageSize) - 1);
}

export interface CreatedRange {
  from: string; // "YYYY-MM-DD" or ""
  to: string;
}

function localDay(day: string, hours: number, minutes: number, seconds: number, ms: number): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (match === null) return null;
  const [, y, m, d] = match;
  return new Date(Number(y), Number(m) - 1, Number(d), hours, minutes, seconds, ms).getTime();
}

/** U-19: From is 00:00:00.000 and To is 23:59:59.999 of that day in the browser's time zone. */
export function createdBounds(range: CreatedRange): { created_from?: string; created_to?: string } {
  const bounds: { created_from?: string; created_to?: string } = {};
  const from = localDay(range.from, 0, 0, 0, 0);
  const to = localDay(range.to, 23, 59, 59, 999);
  if (from !== null) bounds.created_from = String(from);
  if (to !== null) bounds.created_to = String(to);
  return bounds;
}

/** U-19: the range button label, "…" for an open side; "" when no side is set. */
export function rangeLabel(range: CreatedRange): string {
  if (range.from === "" && range.to === "") return "";
  return `${range.from || "…"} - ${range.to || "…"}`;
}

export interface JobsQuery {
  state: string;
  binding: string;
  search: ParsedSearch;
  created: CreatedRange;
  sort: SortState;
  page: number;
  pageSize: number;
}

/** U-15: the query string of GET /api/jobs; empty filters are left out. */
export function jobsQueryParams(query: JobsQuery): URLSearchParams {
  const params = new URLSearchParams();
  if (query.state !== "") params.set("state", query.state);
  if (query.binding !== "") params.set("binding", query.binding);
  params.set("sort", query.sort.column);
  params.set("order", query.sort.order);
  for (const [key, value] of Object.entries(searchParams(query.search))) params.set(key, value);
  for (const [key, value] of Object.entries(createdBounds(query.created))) params.set(key, value);
  params.set("limit", String(query.pageSize));
  params.set("offset", String(query.page * query.pageSize));
  return params;
}

/** U-19: "Reset" shows when any filter or search is active. */
export function hasActiveFilters(query: JobsQuery): boolean {
  return (
    query.state !== "" ||
    query.binding !== "" ||
    query.search.value !== "" ||
    query.created.from !== "" ||
    query.created.to !== ""
  );
}

/** U-26: only ids still on the current page stay selected. */
export function keepVisibleSelection(selected: readonly string[], visibleIds: readonly string[]): string[] {
  const visible = new Set(visibleIds);
  return selected.filter((id) => visible.has(id));
}

/** U-26: the header checkbox selects the whole page, or clears when all are selected. */
export function toggleAll(selected: readonly string[], visibleIds: readonly string[]): string[] {
  const all = visibleIds.length > 0 && visibleIds.every((id) => selected.includes(id));
  return all ? [] : [...visibleIds];
}

/** ADR-0151: the jobs tab's filters as a POST /api/bulk filter (the list's filters, no paging). */
export function bulkFilter(query: JobsQuery): Record<string, string | number> {
  const filter: Record<string, string | number> = {};
  if (query.state !== "") filter.state = query.state;
  if (query.binding !== "") filter.binding = query.binding;
  for (const [key, value] of Object.entries(searchParams(query.search))) filter[key] = value;
  for (const [key, value] of Object.entries(createdBounds(query.created))) filter[key] = Number(value);
  return filter;
}

/** ADR-0151: the share of a bulk action's matched jobs it has reached, 0..100. */
export function bulkPercent(done: number, failed: number, matched: number): number {
  return matched <= 0 ? 100 : Math.min(100, Math.round(((done + failed) * 100) / matched));
}
