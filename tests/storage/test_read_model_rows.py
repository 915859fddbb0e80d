"""A node snapshot binds the same values whether its JSON columns arrive as text or decoded (D-4)."""

from __future__ import annotations

from tsumugi.storage.read_model_runs import run_node_row
from tsumugi.storage.read_model_schema import RUN_NODE_COLUMNS


def _snapshot(**values: object) -> dict[str, object]:
    snapshot: dict[str, object] = dict.fromkeys(RUN_NODE_COLUMNS)
    snapshot.update(run_id="F:1", node_id="each", seq=3, binding="B", state="COMPLETED", origin="static")
    snapshot.update(created_at=1, updated_at=2, position=0)
    snapshot.update(values)
    return snapshot


def test_a_snapshot_read_from_storage_and_one_with_decoded_values_bind_alike() -> None:
    stored = _snapshot(after='["a","b"]', container=1, result='{"succeeded":2}')
    decoded = _snapshot(after=["a", "b"], container=True, result={"succeeded": 2})
    assert run_node_row(stored) == run_node_row(decoded)
    row = dict(zip(RUN_NODE_COLUMNS, run_node_row(decoded), strict=True))
    assert (row["after"], row["container"], row["result"]) == ('["a","b"]', 1, '{"succeeded":2}')


def test_a_missing_after_binds_an_empty_list_and_a_number_result_binds_as_json_text() -> None:
    bound = run_node_row(_snapshot(after="", container=0, result=1e20))
    row = dict(zip(RUN_NODE_COLUMNS, bound, strict=True))
    assert (row["after"], row["container"], row["result"]) == ("[]", 0, "100000000000000000000")
