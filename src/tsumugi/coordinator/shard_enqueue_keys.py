"""Debounce and throttle inside one enqueue batch (ADR-0149, ADR-0150).

``KeyedEnqueue`` lives for one ``enqueue_batch`` call, inside its transaction: it sweeps ended windows
and full buckets once, remembers the windows the batch itself opens (their rows are inserted at the end
of the batch), and applies the decisions of ``core.enqueue_keys``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tsumugi.coordinator.context import ShardContext
from tsumugi.coordinator.enqueue_wire import EnqueueItem, mapping, maybe_int, payload_text, required_int, text
from tsumugi.coordinator.job_transitions import to_scheduled
from tsumugi.core import enqueue_keys as keys
from tsumugi.core.enqueue_keys import ThrottleDecision
from tsumugi.core.enqueue_outcome import EnqueueOutcome
from tsumugi.core.states import JobState
from tsumugi.storage.enqueue_key_tables import DebounceKeys, ThrottleKeys
from tsumugi.storage.job_rows import JobRow, scheduled_lane


class KeyedEnqueue:
    """The debounce and throttle state one batch reads and writes."""

    def __init__(self, ctx: ShardContext, now_ms: int) -> None:
        self.ctx = ctx
        self.now_ms = now_ms
        self._debounce: DebounceKeys | None = None
        self._throttle: ThrottleKeys | None = None
        # debounce key -> (index in the batch's rows, the window's hard end): rows not inserted yet
        self._opened: dict[str, tuple[int, int | None]] = {}
        self._tats: dict[str, float] = {}  # throttle keys this batch moved, read back within the batch
        self._admitted: ThrottleDecision | None = None  # the current item's, spent if it becomes a job

    @property
    def debounce(self) -> DebounceKeys:
        if self._debounce is None:
            self._debounce = DebounceKeys(self.ctx.sql)
            self._debounce.delete_expired(self.now_ms)  # ended windows go first, like unique keys (J-33)
        return self._debounce

    @property
    def throttle(self) -> ThrottleKeys:
        if self._throttle is None:
            self._throttle = ThrottleKeys(self.ctx.sql)
            self._throttle.delete_expired(self.now_ms)  # a passed arrival time is a full bucket
        return self._throttle

    def before_insert(
        self, item: EnqueueItem, rows: list[tuple[JobRow, int, float]]
    ) -> EnqueueOutcome | None:
        """The answer when no new job is needed: debounced into a waiting job, or dropped by a throttle."""
        self._admitted = None
        debounce_key = text(item, "debounceKey")
        if debounce_key is not None:
            return self.debounce_into(debounce_key, item, rows)
        throttle_key = text(item, "throttleKey")
        unique_key = text(item, "uniqueKey")
        if unique_key is not None and self.ctx.unique.live_holder(unique_key, self.now_ms) is not None:
            return None  # the unique key answers with its holder; a duplicate spends no token
        if throttle_key is not None:
            decision = self.throttle_decision(throttle_key, mapping(item, "throttle"))
            if not decision.admitted:
                return EnqueueOutcome(None, "dropped", decision.slot_at)  # no job, no token spent
            self._admitted = decision
        return None

    def shape(self, item: EnqueueItem, job: JobRow, index: int) -> None:
        """A new keyed job: it opens its debounce window, or spends its throttle token and waits its slot."""
        debounce_key = text(item, "debounceKey")
        if debounce_key is not None:
            self.open_window(debounce_key, item, job, index)
        throttle_key = text(item, "throttleKey")
        if throttle_key is not None and self._admitted is not None:
            self.spend(throttle_key, self._admitted)
            job["run_after"] = max(job["run_after"], self._admitted.slot_at)
        self._admitted = None

    # ------------------------------------------------------------------ debounce (ADR-0149)
    def debounce_into(
        self, key: str, item: EnqueueItem, rows: list[tuple[JobRow, int, float]]
    ) -> EnqueueOutcome | None:
        """Give this payload to the key's waiting job and push its run_after; None when no window is open."""
        now = self.now_ms
        debounce_ms = required_int(item, "debounceMs")
        payload = payload_text(item)  # ADR-0133: within the same limit as a new job's payload
        opened = self._opened.get(key)
        if opened is not None:  # opened earlier in this batch: the row is still in memory
            index, max_at = opened
            job = rows[index][0]
            run_after = keys.debounced_run_after(now, debounce_ms, max_at)
            job["payload"], job["run_after"] = payload, run_after
            rows[index] = (job, *scheduled_lane(run_after, job["priority"], now))
            return EnqueueOutcome(job["id"], "debounced", run_after)
        holder = self.debounce.holder(key)
        if holder is None:
            return None
        waiting = self.ctx.jobs.get(holder.job_id)
        # Only a job that has not started waits for more: once due, dispatched or retried, a new window.
        if (
            waiting is None
            or waiting["state"] != "SCHEDULED"
            or waiting["attempts"] != 0
            or waiting["run_after"] <= now
        ):
            return None
        run_after = keys.debounced_run_after(now, debounce_ms, holder.max_at)
        if (
            to_scheduled(
                self.ctx, holder.job_id, (JobState.SCHEDULED,), now, run_after=run_after, payload=payload
            )
            is None
        ):
            return None
        self.debounce.extend(key, run_after)
        return EnqueueOutcome(holder.job_id, "debounced", run_after)

    def open_window(self, key: str, item: EnqueueItem, job: JobRow, index: int) -> None:
        """A new job opens the key's window: it waits ``debounce_ms``, bounded by ``debounce_max_ms``."""
        now = self.now_ms
        max_at = keys.debounce_max_at(now, maybe_int(item, "debounceMaxMs"))
        job["run_after"] = keys.debounced_run_after(now, required_int(item, "debounceMs"), max_at)
        self.debounce.put(key, job["id"], job["run_after"], max_at)
        self._opened[key] = (index, max_at)

    def window_ends(self, rows: list[tuple[JobRow, int, float]]) -> None:
        """Store where the batch left each window it opened (a later item may have pushed it)."""
        for key, (index, _max_at) in self._opened.items():
            self.debounce.extend(key, rows[index][0]["run_after"])

    # ------------------------------------------------------------------ throttle (ADR-0150)
    def throttle_decision(self, key: str, rule_wire: Mapping[str, object]) -> ThrottleDecision:
        """The key's decision for one more job now; nothing is stored until ``spend``."""
        tat = self._tats[key] if key in self._tats else self.throttle.tat(key)
        return keys.throttle(keys.throttle_rule_from_wire(rule_wire), tat, self.now_ms)

    def spend(self, key: str, decision: ThrottleDecision) -> None:
        self._tats[key] = decision.tat
        self.throttle.put(key, decision.tat)
