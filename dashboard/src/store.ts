// App-wide UI state shared by tabs and modals: which detail is open, the toolbar message and the
// refresh tick that every tab reloads on (U-12, U-14).
import { reactive } from "vue";

export type TabKey = "jobs" | "runs" | "schedules" | "metrics" | "bindings";

export const ui = reactive({
  tab: "jobs" as TabKey,
  message: "",
  /** Bumped by the refresh timer and after token entry; tabs reload when it changes. */
  tick: 0,
  /** Bumped after a mutation, so the list under a modal reloads. */
  listReload: 0,
  openJobId: null as string | null,
  openRunId: null as string | null,
  tokenCookie: null as string | null,
  flows: [] as string[],
  bindings: [] as string[],
});

export function openJob(id: string): void {
  ui.openRunId = null;
  ui.openJobId = id;
}

export function openRun(id: string): void {
  ui.openJobId = null;
  ui.openRunId = id;
}

export function say(message: string): void {
  ui.message = message;
}
