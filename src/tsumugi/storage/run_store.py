"""Rows of one run: the run row, its nodes and the progress counters."""
# F-23, F-24, F-26

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final, NamedTuple, cast

from tsumugi.core import wire_format
from tsumugi.core.flow.advance import NodeView
from tsumugi.core.flow.live_progress import LiveProgress, live_progress_of
from tsumugi.core.states import COUNTED_FAILED_NODE_STATES, TERMINAL_NODE_STATES, NodeStateName, RunStateName
from tsumugi.ports import SqlExecutor, SqlValue
from tsumugi.storage.sql_values import optional_text

# F-26: the states the node_done and node_failed counters count, as bound parameters
DONE_STATES: Final[tuple[NodeStateName, ...]] = tuple(sorted(TERMINAL_NODE_STATES))
FAILED_STATES: Final[tuple[NodeStateName, ...]] = tuple(sorted(COUNTED_FAILED_NODE_STATES))


class RunRow(NamedTuple):
    """The run's row (a tuple: a tick reads it several times)."""

    id: str
    flow: str
    state: RunStateName
    input: str
    shape: str
    cancelling: int
    created_at: int
    updated_at: int
    parent_run_id: str | None
    parent_node_id: str | None
    depth: int
    parent_notified: int
    deadline_ms: int | None
    deadline_at: int | None
    expired: int


class NodeRow(NamedTuple):
    """A node's row (a tuple: a tick reads one per node it decides)."""

    id: str
    binding: str
    state: NodeStateName
    container: int
    parent: str | None
    origin: str
    after: str
    payload: str | None
    options: str | None
    job_id: str | None
    result: str | None
    error: str | None
    seq: int
    created_at: int
    updated_at: int
    subflow: str | None
    child_run_id: str | None
    trigger: str
    wait_kind: str | None  # ADR-0147: "sleep" or "event" for a waiting node
    wait_event: str | None
    wake_at: int | None
    on_timeout: str | None


class NodeJobState(NamedTuple):
    """A node's id, state and latest job: what ``job_states`` reads of its row."""

    id: str
    state: NodeStateName
    job_id: str | None


class ChildRow(NamedTuple):
    """A fan-out or spawned child as ``insert_children`` stores it: payload and options as JSON text."""

    id: str
    binding: str
    payload: str
    options: str


RUN_COLUMNS: Final = RunRow._fields
NODE_COLUMNS: Final = NodeRow._fields
_NODE_SELECT: Final = f"SELECT {', '.join(NODE_COLUMNS)} FROM node"
_INSERT_CHILD: Final = (
    "INSERT INTO node (id, binding, payload, options, parent, origin, seq, created_at, updated_at, state, "
    "container, after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', 0, '[]')"
)
MAX_BOUND: Final = 100  # Durable Object SQL binds at most 100 parameters per statement


def node_view(node: NodeRow) -> NodeView:
    """What ``advance`` reads of a node row."""
    return NodeView(
        node.id,
        node.state,
        bool(node.container),
        node.subflow is not None,
        node.parent,
        node.origin,
        _after(node.after),
        node.trigger,
        node.wait_kind is not None,
    )


def _inserted_view(values: Mapping[str, SqlValue]) -> NodeView:
    """``node_view`` of the row ``values`` inserts, with the defaults of the node table (run_schema)."""
    return NodeView(
        str(values["id"]),
        str(values["state"]),
        bool(values.get("container")),
        values.get("subflow") is not None,
        None if (parent := values.get("parent")) is None else str(parent),
        str(values["origin"]),
        _after(str(values.get("after", "[]"))),
        str(values.get("trigger") or "success"),
        values.get("wait_kind") is not None,
    )


def _after(text: str) -> tuple[str, ...]:
    return () if text == "[]" else tuple(wire_format.loads(text))  # a child has no edges of its own


class RunStore:
    """Named queries over the run's own SQLite. Every method is synchronous (STYLE.md)."""

    def __init__(self, sql: SqlExecutor) -> None:
        self.sql = sql
        self._live: LiveProgress | None = None
        # Each node's latest job id, kept with ``_live`` (and dropped with it): what an event is checked
        # against (F-45) without reading the rows.
        self._job_ids: dict[str, str | None] = {}
        self._run: RunRow | None = None  # the run row as last read or written here; None: read it

    def live(self) -> LiveProgress:
        """The run's progress kept in memory (ADR-0115): read from storage once, then kept by every write.

        Storage stays the truth: ``forget`` drops it after a rolled-back or failed write.
        """
        if self._live is None:
            nodes = self.nodes()
            self._job_ids = {n.id: n.job_id for n in nodes}
            self._live = live_progress_of((n.seq, node_view(n)) for n in nodes)
        return self._live

    def forget(self) -> None:
        self._live = None
        self._job_ids = {}
        self._run = None

    def run(self) -> RunRow | None:
        """The run row; kept between calls, since only this store writes it (a tick reads it often)."""
        if self._run is None:
            rows = self.sql.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM run LIMIT 1")
            self._run = RunRow(*rows[0]) if rows else None  # type: ignore[arg-type]
        return self._run

    def insert_run(self, values: Mapping[str, SqlValue]) -> None:
        self._run = None
        names = list(values)
        self.sql.execute(
            f"INSERT INTO run ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [values[n] for n in names],
        )

    def update_run(self, now_ms: int, **values: SqlValue) -> None:
        """Set columns of the run row and touch ``updated_at``."""
        self._run = None
        values["updated_at"] = now_ms
        assignments = ", ".join(f"{name} = ?" for name in values)
        self.sql.execute(f"UPDATE run SET {assignments}", list(values.values()))

    def nodes(self) -> list[NodeRow]:
        """Every node in ``(seq, id)`` order, the order ``advance`` reads them in."""
        # F-24
        return [NodeRow(*r) for r in self.sql.execute(f"{_NODE_SELECT} ORDER BY seq, id")]  # type: ignore[arg-type]

    def node(self, node_id: str) -> NodeRow | None:
        rows = self.sql.execute(f"{_NODE_SELECT} WHERE id = ?", [node_id])
        return NodeRow(*rows[0]) if rows else None  # type: ignore[arg-type]

    def children(self, parent: str) -> list[NodeRow]:
        return [
            NodeRow(*r)  # type: ignore[arg-type]
            for r in self.sql.execute(f"{_NODE_SELECT} WHERE parent = ? ORDER BY seq, id", [parent])
        ]

    def child_states(self, parent: str) -> list[str]:
        """The state of each direct child of ``parent``: what a container's summary counts."""
        return [str(row[0]) for row in self.sql.execute("SELECT state FROM node WHERE parent = ?", [parent])]

    def nodes_by_id(self, node_ids: Collection[str]) -> list[NodeRow]:
        """The named nodes in ``(seq, id)`` order, in chunks the bound-parameter limit allows."""
        wanted = list(node_ids)
        rows: list[NodeRow] = []
        for start in range(0, len(wanted), MAX_BOUND):
            chunk = wanted[start : start + MAX_BOUND]
            query = f"{_NODE_SELECT} WHERE id IN ({', '.join('?' * len(chunk))})"
            rows += [NodeRow(*r) for r in self.sql.execute(query, chunk)]  # type: ignore[arg-type]
        return sorted(rows, key=lambda n: (n.seq, n.id))

    def job_states(self, node_ids: Collection[str]) -> dict[str, NodeJobState]:
        """The state and job of each named node there is, by id: what a job's event is checked against.

        Answered from memory while the run's progress is kept there, which every write keeps with it.
        """
        live = self._live
        if live is not None:
            job_ids, by_id = self._job_ids, live.by_id
            return {
                node_id: NodeJobState(
                    node_id, cast("NodeStateName", by_id[node_id].state), job_ids.get(node_id)
                )
                for node_id in node_ids
                if node_id in by_id
            }
        wanted = list(node_ids)
        found: dict[str, NodeJobState] = {}
        for start in range(0, len(wanted), MAX_BOUND):
            chunk = wanted[start : start + MAX_BOUND]
            query = f"SELECT id, state, job_id FROM node WHERE id IN ({', '.join('?' * len(chunk))})"
            for row in self.sql.execute(query, chunk):
                found[str(row[0])] = NodeJobState(*row)  # type: ignore[arg-type]
        return found

    def node_count(self) -> int:
        if self._live is not None:
            return len(self._live.by_id)
        return int(self.sql.execute("SELECT COUNT(*) FROM node")[0][0] or 0)

    def next_seq(self) -> int:
        return int(self.sql.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM node")[0][0] or 0)

    def insert_nodes(self, rows: Iterable[Mapping[str, SqlValue]]) -> list[str]:
        """Insert-or-ignore on ``id`` (the first writer wins); returns the ids actually inserted."""
        # F-24
        live = self.live()
        fresh: dict[str, Mapping[str, SqlValue]] = {}
        for values in rows:
            node_id = str(values["id"])
            if node_id not in live.by_id and node_id not in fresh:
                fresh[node_id] = values
        batch: list[Mapping[str, SqlValue]] = []
        names: tuple[str, ...] = ()
        for values in fresh.values():
            columns = tuple(values)
            if batch and (columns != names or (len(batch) + 1) * len(names) > MAX_BOUND):
                self._insert_batch(names, batch)
                batch = []
            names = columns
            batch.append(values)
        if batch:
            self._insert_batch(names, batch)
        for node_id, values in fresh.items():
            live.add(int(values["seq"] or 0), _inserted_view(values))
            self._job_ids[node_id] = optional_text(values.get("job_id"))
        return list(fresh)

    def insert_children(
        self, parent: str, origin: str, children: Sequence[ChildRow], seq: int, now_ms: int
    ) -> list[str]:
        """Insert fan-out or spawned children of ``parent`` as PENDING nodes, from ``seq`` on.

        A child whose id is already a node is left out (the first writer wins); returns the ids inserted.
        """
        # F-24, F-49, F-56
        live = self.live()
        fresh: dict[str, tuple[int, ChildRow]] = {}
        for at, child in enumerate(children, seq):
            if child.id not in live.by_id:
                fresh.setdefault(child.id, (at, child))
        self.sql.execute_many(
            _INSERT_CHILD, [(*child, parent, origin, at, now_ms, now_ms) for at, child in fresh.values()]
        )
        pending = (
            (at, NodeView(child.id, "PENDING", parent=parent, origin=origin)) for at, child in fresh.values()
        )
        live.add_children(parent, pending)
        self._job_ids.update(dict.fromkeys(fresh))
        return list(fresh)

    def _insert_batch(self, names: tuple[str, ...], batch: list[Mapping[str, SqlValue]]) -> None:
        """Rows with the same columns in one statement, within the bound-parameter limit."""
        row = f"({', '.join('?' * len(names))})"
        self.sql.execute(
            f"INSERT INTO node ({', '.join(names)}) VALUES {', '.join([row] * len(batch))}",
            [values[n] for values in batch for n in names],
        )

    def update_node(self, node_id: str, now_ms: int, **values: SqlValue) -> None:
        values["updated_at"] = now_ms
        assignments = ", ".join(f"{name} = ?" for name in values)
        self.sql.execute(f"UPDATE node SET {assignments} WHERE id = ?", [*values.values(), node_id])
        if self._live is not None and "state" in values:
            self._live.set_state(node_id, str(values["state"]))
        if self._live is not None and "job_id" in values:
            self._job_ids[node_id] = optional_text(values["job_id"])

    def settle_nodes(self, settled: Sequence[tuple[str, str, SqlValue, SqlValue]], now_ms: int) -> None:
        """``update_node(id, state=, result=, error=)`` for many nodes: one statement per chunk (ADR-0136)."""
        self._update_by_id("state = v.column2, result = v.column3, error = v.column4", settled, now_ms)
        if self._live is not None:
            self._live.set_states((node_id, state) for node_id, state, _, _ in settled)

    def set_job_ids(self, job_ids: Mapping[str, str], now_ms: int) -> None:
        """Store each node's reserved job id, many nodes per statement."""
        # F-41
        self._update_by_id("job_id = v.column2", list(job_ids.items()), now_ms)
        if self._live is not None:
            self._job_ids.update(job_ids)

    def _update_by_id(self, assignments: str, rows: Sequence[Sequence[SqlValue]], now_ms: int) -> None:
        """Set ``assignments`` (over ``v.column2`` on) and ``updated_at`` on each node of ``rows``, whose
        first value is its id: a join on ``VALUES``, as many rows a statement as the bound limit allows."""
        if not rows:
            return
        width = len(rows[0])
        per_statement = (MAX_BOUND - 1) // width
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            values = ", ".join([f"({', '.join('?' * width)})"] * len(chunk))
            self.sql.execute(
                f"UPDATE node SET {assignments}, updated_at = ? FROM (VALUES {values}) AS v "
                "WHERE node.id = v.column1",
                [now_ms, *(value for row in chunk for value in row)],  # in the order of their marks
            )

    def mark_in_state(
        self, node_ids: Iterable[str], expected: NodeStateName, now_ms: int, state: NodeStateName
    ) -> list[str]:
        """Move the nodes still in ``expected`` to ``state``, many per statement; returns the ids moved."""
        live = self.live()
        moved = [n for n in dict.fromkeys(node_ids) if n in live.by_id and live.by_id[n].state == expected]
        per_statement = MAX_BOUND - 3
        for start in range(0, len(moved), per_statement):
            chunk = moved[start : start + per_statement]
            marks = ", ".join("?" * len(chunk))
            self.sql.execute(
                # "+state": the ids pick the rows through the primary key; the state index would walk
                # every node still in ``expected`` for each statement (quadratic in a wide fan-out).
                f"UPDATE node SET state = ?, updated_at = ? WHERE +state = ? AND id IN ({marks})",
                [state, now_ms, expected, *chunk],
            )
        live.set_states((node_id, state) for node_id in moved)
        return moved

    def update_node_in_state(
        self, node_id: str, expected: NodeStateName, now_ms: int, **values: SqlValue
    ) -> bool:
        """Update only while the node is still in ``expected``; False when something moved it first."""
        node = self.node(node_id)
        if node is None or node.state != expected:
            return False
        self.update_node(node_id, now_ms, **values)
        return True

    def counters(self) -> tuple[int, int, int]:
        """``(node_total, node_done, node_failed)``, kept as nodes move (ADR-0115)."""
        # F-26
        return self.live().counters()

    def counted(self) -> tuple[int, int, int]:
        """``counters`` recounted from every row: the reference the kept counters are tested against."""
        row = self.sql.execute(
            "SELECT COUNT(*), "
            f"SUM(CASE WHEN state IN ({', '.join('?' * len(DONE_STATES))}) THEN 1 ELSE 0 END), "
            f"SUM(CASE WHEN state IN ({', '.join('?' * len(FAILED_STATES))}) THEN 1 ELSE 0 END) FROM node",
            [*DONE_STATES, *FAILED_STATES],
        )[0]
        return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)

    def delete_everything(self) -> None:
        """The sweep: afterwards the run behaves as never created; empty tables stay."""
        # F-82
        for table in ("node", "run_outbox", "run_event", "run"):
            self.sql.execute(f"DELETE FROM {table}")
        self._live = None
        self._job_ids = {}
        self._run = None
