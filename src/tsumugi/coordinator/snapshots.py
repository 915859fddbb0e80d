"""Job snapshots for the read model: exactly the D1 ``job`` columns."""
# J-190, J-192, J-193

from __future__ import annotations

import operator
from typing import Final, TypeAlias

from tsumugi.storage.job_rows import JobRow
from tsumugi.storage.projection_outbox import AttemptEntry, attempts_log_text
from tsumugi.storage.read_model_schema import JOB_COLUMNS
from tsumugi.storage.read_model_writer import ScalarSnapshot

# The D1 `job` columns copied from the shard row; `seq` and `attempts_log` are derived (J-193).
SNAPSHOT_COLUMNS: Final = tuple(column for column in JOB_COLUMNS if column not in ("seq", "attempts_log"))
_snapshot_values = operator.itemgetter(*SNAPSHOT_COLUMNS)  # in C
JobSnapshot: TypeAlias = ScalarSnapshot  # one D1 `job` row by column, values as SQLite gave them


def snapshot(job: JobRow, attempts_log: list[AttemptEntry]) -> JobSnapshot:
    """One D1 row; ``seq`` is the job's version, so replays never regress a row (ADR-0042)."""
    # J-192
    out = ScalarSnapshot(zip(SNAPSHOT_COLUMNS, _snapshot_values(job), strict=True))
    out["seq"] = job["version"]
    out["attempts_log"] = attempts_log_text(attempts_log)
    return out
