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

/**
 * A detail view opened right after its object was created may find the read model without it for a
 * moment: a new job is first projected about a second after it is enqueued (ADR-0119), a run after its
 * first tick (F-84). `waitsOut(error)` answers whether a 404 should be polled again rather than shown,
 * for up to `tries` calls, and only until the object has been seen once (`seen()`).
 */
export function notFoundGrace(tries: number, isNotFound: (error: unknown) => boolean) {
  let left = tries;
  let found = false;
  return {
    seen(): void {
      found = true;
    },
    waitsOut(error: unknown): boolean {
      if (found || left <= 0 || !isNotFound(error)) return false;
      left -= 1;
      return true;
    },
  };
}

/** How long a detail view waits for a just-created object: 30 polls of LIVE_POLL_MS. */
export const NOT_FOUND_TRIES = 30;
