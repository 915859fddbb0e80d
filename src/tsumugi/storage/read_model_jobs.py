"""Job queries on the read model: list, detail, stats, bindings and bulk selection."""
# A-28..A-56

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tsumugi.ports import SqlDatabase, SqlValue
from tsumugi.storage.read_model_schema import ALL_JOB_STATES

# the sort allow-list; anything else sorts by updated_at.
SORT_COLUMNS: Final[tuple[str, ...]] = (
    "updated_at",
    "created_at",
    "binding",
    "state",
    "priority",
    "attempts",
)
SUMMARY_COLUMNS: Final = (
    "id, binding, state, priority, attempts, max_attempts, created_at, updated_at, dispatched_at"
)
# D1 refuses a compound SELECT of more than 5 terms, so the seven per-state branches nest in groups.
COMPOUND_TERMS: Final = 4
DETAIL_COLUMNS: Final = (
    SUMMARY_COLUMNS + ", concurrency_key, unique_key, guarantee, run_after, progress, payload, result, "
    "attempts_log"
)

Row = dict[str, SqlValue]


@dataclass(frozen=True)
class JobFilter:
    """Exact-match filters shared by the list and the bulk selection; None = no filter."""

    #

    states: tuple[str, ...] = ()
    binding: str | None = None
    id: str | None = None
    unique_key: str | None = None
    concurrency_key: str | None = None
    created_from: float | None = None
    created_to: float | None = None

    def where(self) -> tuple[str, list[SqlValue]]:
        clauses: list[str] = []
        params: list[SqlValue] = []
        if len(self.states) == 1:
            clauses.append("state = ?")
            params.append(self.states[0])
        elif self.states:
            clauses.append(f"state IN ({', '.join('?' for _ in self.states)})")
            params.extend(self.states)
        for column in ("binding", "id", "unique_key", "concurrency_key"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self.created_from is not None:
            clauses.append("created_at >= ?")
            params.append(self.created_from)
        if self.created_to is not None:
            clauses.append("created_at <= ?")
            params.append(self.created_to)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def _only_created_range(self) -> bool:
        return not (self.states or self.binding or self.id or self.unique_key or self.concurrency_key)


@dataclass(frozen=True)
class JobPage:
    sort: str = "updated_at"
    ascending: bool = False
    limit: int = 20
    offset: int = 0


def _order_by(page: JobPage) -> str:
    # the id tie-breaker is always descending.
    return f"ORDER BY {page.sort} {'ASC' if page.ascending else 'DESC'}, id DESC"


def list_jobs_sql(flt: JobFilter, page: JobPage) -> tuple[str, list[SqlValue]]:
    """The list query; the default listing walks the (state, updated_at) index once per state.

    D1 has no index on ``updated_at`` alone (the DDL is fixed), so an unfiltered listing sorted by
    ``updated_at`` would scan the whole table. Merging the top rows of each state's index range gives the
    same page from index walks only (ADR-0062).
    """
    # J-193
    order = _order_by(page)
    if page.sort == "updated_at" and flt._only_created_range():
        where, params = JobFilter(created_from=flt.created_from, created_to=flt.created_to).where()
        extra = where.replace(" WHERE ", " AND ", 1)
        branch = f"SELECT * FROM (SELECT {SUMMARY_COLUMNS} FROM job WHERE state = ?{extra} {order} LIMIT ?)"
        groups: list[str] = []
        all_params: list[SqlValue] = []
        for start in range(0, len(ALL_JOB_STATES), COMPOUND_TERMS):
            states = ALL_JOB_STATES[start : start + COMPOUND_TERMS]
            groups.append(f"SELECT * FROM ({' UNION ALL '.join(branch for _ in states)})")
            for state in states:
                all_params.extend([state, *params, page.offset + page.limit])
        sql = f"SELECT * FROM ({' UNION ALL '.join(groups)}) {order} LIMIT ? OFFSET ?"
        return sql, [*all_params, page.limit, page.offset]
    where, params = flt.where()
    return (
        f"SELECT {SUMMARY_COLUMNS} FROM job{where} {order} LIMIT ? OFFSET ?",
        [*params, page.limit, page.offset],
    )


async def list_jobs(db: SqlDatabase, flt: JobFilter, page: JobPage) -> tuple[list[Row], int]:
    """One page of job summaries and the count of all matching rows."""
    #
    sql, params = list_jobs_sql(flt, page)
    rows = await db.all(sql, params)
    where, count_params = flt.where()
    count = await db.all(f"SELECT COUNT(*) AS n FROM job{where}", count_params)
    return rows, int(count[0]["n"] or 0) if count else 0


async def get_job(db: SqlDatabase, job_id: str) -> Row | None:
    rows = await db.all(f"SELECT {DETAIL_COLUMNS} FROM job WHERE id = ?", (job_id,))
    return rows[0] if rows else None


async def count_by_state(db: SqlDatabase) -> dict[str, int]:
    """Counts per state with at least one row; one index probe per state."""
    #
    rows = await db.all("SELECT state, COUNT(*) AS n FROM job GROUP BY state")
    return {str(r["state"]): int(r["n"] or 0) for r in rows}


async def oldest_scheduled_created_at(db: SqlDatabase) -> int | None:
    rows = await db.all("SELECT MIN(created_at) AS m FROM job WHERE state = 'SCHEDULED'")
    value = rows[0]["m"] if rows else None
    return None if value is None else int(value)


async def distinct_bindings(db: SqlDatabase) -> list[str]:
    rows = await db.all("SELECT DISTINCT binding FROM job ORDER BY binding")
    return [str(r["binding"]) for r in rows]


async def select_for_bulk(db: SqlDatabase, flt: JobFilter, limit: int) -> tuple[list[str], int]:
    """Oldest matching ids first, so repeated bulk calls make progress, and the full match count."""
    #
    where, params = flt.where()
    rows = await db.all(
        f"SELECT id FROM job{where} ORDER BY created_at ASC, id ASC LIMIT ?", [*params, limit]
    )
    count = await db.all(f"SELECT COUNT(*) AS n FROM job{where}", params)
    return [str(r["id"]) for r in rows], int(count[0]["n"] or 0) if count else 0
