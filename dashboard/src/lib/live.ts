// Live updates without page reloads: a poller that reloads while something is active and pauses
// while the tab is hidden (ADR-0094).
import { onBeforeUnmount } from "vue";

export interface Poller {
  /** Schedules the next call after `delayMs`, replacing any pending one. */
  schedule(delayMs: number): void;
  stop(): void;
}

export function usePoller(callback: () => void | Promise<void>): Poller {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stop = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const schedule = (delayMs: number): void => {
    stop();
    timer = setTimeout(async () => {
      timer = undefined;
      if (typeof document !== "undefined" && document.hidden) {
        schedule(delayMs);
        return;
      }
      await callback();
    }, delayMs);
  };
  onBeforeUnmount(stop);
  return { schedule, stop };
}

/** Detail views poll once a second while their object is active (ADR-0094). */
export const LIVE_POLL_MS = 1_000;
