"""The index merge yields exactly the pure J-142 order over all ready jobs (ADR-0043)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tsumugi.core.job_view import JobView
from tsumugi.core.schedule import candidate_order
from tsumugi.runtimes.local.sqlite_executor import SqliteExecutor
from tsumugi.storage.job_rows import JOB_COLUMNS, scheduled_lane, seq_floor
from tsumugi.storage.job_table import JobStore
from tsumugi.storage.shard_schema import ensure_shard_schema
from tsumugi.storage.tick_tables import LaneQueries

NOW = 50_000_000

jobs_strategy = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 2.5, -1, 10]),
        st.integers(NOW - 1_000_000, NOW),
        st.integers(NOW - 10, NOW + 10),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(
    jobs_strategy,
    st.sampled_from([None, 1000, 60_000]),
    st.integers(1, 7),
    st.none() | st.integers(1, 50),
)
def test_merge_equals_pure_order(
    specs: list[tuple[float, int, int]], aging: int | None, page_rows: int, first_rows: int | None
) -> None:
    # J-142, J-150a: every ready job, in effective priority / created_at / id order
    sql = SqliteExecutor()
    ensure_shard_schema(sql)
    store = JobStore(sql)
    views = []
    for n, (priority, created_at, run_after) in enumerate(specs):
        row: dict[str, object] = dict.fromkeys(JOB_COLUMNS)
        row.update(
            id=f"B#0:j{n:03d}",
            binding="B",
            state="SCHEDULED",
            priority=priority,
            attempts=0,
            max_attempts=3,
            guarantee="at-least-once",
            timeout_ms=1,
            backoff="{}",
            run_after=run_after,
            created_at=created_at,
            updated_at=created_at,
            payload="null",
            version=seq_floor(created_at),
        )
        ready, lane_at = scheduled_lane(run_after, priority, NOW)
        store.insert_many([(row, ready, lane_at)])  # type: ignore[list-item]
        if run_after <= NOW:
            views.append(
                JobView(id=str(row["id"]), state="SCHEDULED", priority=priority, created_at=created_at)
            )
    lanes = LaneQueries(sql)
    merged = [j.id for j in lanes.ready_in_order(NOW, aging, page_rows=page_rows, first_rows=first_rows)]
    assert merged == [v.id for v in sorted(views, key=lambda v: candidate_order(v, NOW, aging))]
    sql.close()
