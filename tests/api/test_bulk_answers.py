"""A shard's bulk retry/cancel answer, read back by the REST app (api/bulk_answers)."""

from __future__ import annotations

from tsumugi.api.bulk_answers import changed_ids, counted, refusals
from tsumugi.core.json_types import JsonObject

ANSWER: JsonObject = {
    "ok": ["B#0:a", "B#0:b"],
    "failed": [{"id": "B#0:c", "reason": "invalid-state"}, {"id": "B#0:d", "reason": "gone"}],
}


def test_the_shards_answer_is_read_in_its_order() -> None:
    # J-134
    assert changed_ids(ANSWER) == ["B#0:a", "B#0:b"]
    assert refusals(ANSWER) == [
        {"id": "B#0:c", "reason": "invalid-state"},
        {"id": "B#0:d", "reason": "gone"},
    ]
    assert counted(ANSWER) == (2, 2)


def test_an_answer_without_lists_counts_as_nothing() -> None:
    # As before: a missing "ok" or "failed" is an empty list.
    assert changed_ids({}) == []
    assert refusals({}) == []
    assert counted({"ok": None, "failed": "x"}) == (0, 0)


def test_malformed_entries_are_left_out_of_the_lists() -> None:
    answer: JsonObject = {
        "ok": ["B#0:a", 7, None],
        "failed": [{"id": "B#0:c"}, {"id": 3, "reason": "gone"}, "B#0:e", {"id": "B#0:f", "reason": "gone"}],
    }
    assert changed_ids(answer) == ["B#0:a"]
    assert refusals(answer) == [{"id": "B#0:f", "reason": "gone"}]
