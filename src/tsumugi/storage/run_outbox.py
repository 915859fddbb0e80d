"""The run's outbox: what changed, waiting to be projected into the read model.

The run's own changes are kept as snapshots taken in the same transaction. A node's change is only a mark:
its snapshot is read from the node row when the mark is projected, which is the same or a newer state
(ADR-0168). Rows are projected in ``seq`` order and deleted once the read model has them.
"""
# F-25, F-35 step 7, F-84

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonObject
from tsumugi.ports import Row, SqlExecutor, SqlValue
from tsumugi.storage.run_store import RunRow

# F-25: the read model's view of a node, as (snapshot key, its expression over a node row ``{t}``).
_NODE_SNAPSHOT: Final = (
    ("node_id", "{t}.id"),
    ("binding", "{t}.binding"),
    ("state", "{t}.state"),
    ("container", "{t}.container"),
    ("parent", "{t}.parent"),
    ("origin", "{t}.origin"),
    ("after", "{t}.after"),
    ("job_id", "{t}.job_id"),
    ("child_run_id", "{t}.child_run_id"),
    ("result", "CASE WHEN {t}.container THEN {t}.result END"),  # job results stay in the jobs read model
    ("error", "{t}.error"),
    ("position", "{t}.seq"),
    ("created_at", "{t}.created_at"),
    ("updated_at", "{t}.updated_at"),
    ("wait", "{t}.wait_kind"),  # ADR-0147: null for nodes that do not wait
    ("wait_event", "{t}.wait_event"),
    ("wake_at", "{t}.wake_at"),
)
NODE_SNAPSHOT_KEYS: Final = tuple(key for key, _ in _NODE_SNAPSHOT)
# ``dict``, typed as what it builds from a row read by ``node_snapshot_select``: no node column is a BLOB
# (run_schema), so no value is bytes.
snapshot_of_pairs: Final[Callable[[Iterable[tuple[str, SqlValue]]], JsonObject]] = dict  # type: ignore[assignment]


def node_snapshot_select(table: str) -> str:
    """The columns of a node's snapshot, in ``NODE_SNAPSHOT_KEYS`` order, read from ``table``'s row."""
    return ", ".join(expression.format(t=table) for _, expression in _NODE_SNAPSHOT)


def run_snapshot(run: RunRow, counters: tuple[int, int, int]) -> JsonObject:
    """The read-model view of the run."""
    # F-25
    total, done, failed = counters
    return {
        "id": run.id,
        "flow": run.flow,
        "state": run.state,
        "input": run.input,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "node_total": total,
        "node_done": done,
        "node_failed": failed,
        "parent_run_id": run.parent_run_id,
        "parent_node_id": run.parent_node_id,
    }


MARKS_PER_INSERT: Final = 100  # one bound parameter a mark; Durable Object SQL binds at most 100
PROJECT_BATCH: Final = 200  # F-35 step 7: rows projected per tick; a longer backlog re-arms at once
# A node mark leaves the snapshot column empty. Node rows an earlier version wrote carry a snapshot there;
# they are projected from the node row too, like any mark.
_JOINED: Final = (
    f"SELECT o.seq, o.kind, o.snapshot, o.target, {node_snapshot_select('n')} "
    "FROM run_outbox o LEFT JOIN node n ON o.kind = 'node' AND n.id = o.target"
)
_PENDING: Final = f"{_JOINED} ORDER BY o.seq LIMIT ?"
_PENDING_THROUGH: Final = f"{_JOINED} WHERE o.seq <= ? ORDER BY o.seq LIMIT ?"
_TAKE: Final = "SELECT seq, kind, target FROM run_outbox ORDER BY seq LIMIT ?"
_NODE_AT: Final = 4  # where the node's snapshot starts in a _PENDING row, with its id


@dataclass(slots=True)
class PendingProjection:
    """The oldest outbox rows as read-model snapshots, each carrying its row's ``seq``.

    Only the newest snapshot of each node and of the run in the batch is kept: the read model would
    apply the older ones and then overwrite them. ``last_seq`` is the batch's last row (0 for an empty
    outbox), and ``rows`` how many rows the batch took.
    """

    runs: list[JsonObject] = field(default_factory=list)
    nodes: list[JsonObject] = field(default_factory=list)
    last_seq: int = 0
    rows: int = 0


class RunOutbox:
    """The ``run_outbox`` table, and which nodes already have a mark there no projection has taken.

    A node marked again before its waiting mark is projected needs no second mark: the projection reads
    the row as it is by then. What is known of the waiting marks is read from storage once, and read again
    after ``forget`` (a rollback, or a failed tick).
    """

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql
        self._waiting: set[str] | None = None

    def forget(self) -> None:
        self._waiting = None

    def append_run(self, run_id: str, snapshot: Mapping[str, object]) -> None:
        """The run's snapshot as it is now: its counters must match the node marks written before it."""
        self.sql.execute(
            "INSERT INTO run_outbox (kind, target, snapshot) VALUES ('run', ?, ?)",
            [run_id, wire_format.dumps(snapshot)],
        )

    def mark_nodes(self, node_ids: Iterable[str]) -> None:
        """Queue the nodes for projection, many marks per statement; a node already waiting is skipped."""
        waiting = self._waiting_marks()
        marks = [node_id for node_id in dict.fromkeys(node_ids) if node_id not in waiting]
        for start in range(0, len(marks), MARKS_PER_INSERT):
            chunk = marks[start : start + MARKS_PER_INSERT]
            rows = ", ".join(["('node', ?, '')"] * len(chunk))
            self.sql.execute(f"INSERT INTO run_outbox (kind, target, snapshot) VALUES {rows}", chunk)
            waiting.update(chunk)

    def pending(self, run_id: str, limit: int = PROJECT_BATCH) -> PendingProjection:
        """The oldest ``limit`` rows as snapshots, nodes read from their rows in the same statement.

        The nodes read are no longer waiting: a change after this read needs a mark of its own.
        """
        # Loaded now, not later: loaded while this batch is on its way, the set would hold its marks,
        # which the batch's delete then removes, and a change made meanwhile would be skipped.
        return projection_of(run_id, self.sql.execute(_PENDING, [limit]), self._waiting_marks())

    def take(self, limit: int = PROJECT_BATCH) -> tuple[int, int]:
        """``(last seq, rows)`` of the oldest ``limit`` rows, for a projection made elsewhere from this
        storage (``pending_through``); ``(0, 0)`` when the outbox is empty.

        As in ``pending``, their nodes are no longer waiting, before the projection reads them: a change
        made while it is on its way gets a mark of its own.
        """
        waiting = self._waiting_marks()
        rows = self.sql.execute(_TAKE, [limit])
        for _, kind, target in rows:
            if kind == "node":
                waiting.discard(str(target))
        return (int(rows[-1][0] or 0), len(rows)) if rows else (0, 0)

    def delete_through(self, seq: int) -> None:
        self.sql.execute("DELETE FROM run_outbox WHERE seq <= ?", [seq])

    def is_empty(self) -> bool:
        return not self.sql.execute("SELECT 1 FROM run_outbox LIMIT 1")

    def _waiting_marks(self) -> set[str]:
        if self._waiting is None:
            rows = self.sql.execute("SELECT target FROM run_outbox WHERE kind = 'node'")
            self._waiting = {str(row[0]) for row in rows}
        return self._waiting


def pending_through(
    sql: SqlExecutor, run_id: str, last_seq: int, limit: int = PROJECT_BATCH
) -> PendingProjection:
    """The outbox rows up to ``last_seq`` as ``RunOutbox.pending`` builds them, read by a projection
    beside the run's coordinator, which took them with ``RunOutbox.take`` (ADR-0179)."""
    return projection_of(run_id, sql.execute(_PENDING_THROUGH, [last_seq, limit]), set())


def projection_of(run_id: str, rows: Iterable[Row], waiting: set[str]) -> PendingProjection:
    """The snapshots of joined outbox rows (``_JOINED``), oldest first; their nodes leave ``waiting``."""
    batch = PendingProjection()
    nodes: dict[str, JsonObject] = {}
    for row in rows:
        seq = int(row[0] or 0)
        batch.last_seq, batch.rows = seq, batch.rows + 1
        if row[1] == "run":  # the newest of the run's snapshots stands for the older ones
            batch.runs = [{**wire_format.loads(str(row[2])), "seq": seq}]
            continue
        node_id = str(row[3])
        waiting.discard(node_id)
        if row[_NODE_AT] is not None:  # a node is only ever gone with its whole run (the sweep)
            snapshot = snapshot_of_pairs(zip(NODE_SNAPSHOT_KEYS, row[_NODE_AT:], strict=True))
            snapshot["run_id"], snapshot["seq"] = run_id, seq
            nodes.pop(node_id, None)  # the newest mark stands for the older ones
            nodes[node_id] = snapshot
    batch.nodes = list(nodes.values())
    return batch
