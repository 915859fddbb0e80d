"""Job ids, shard names and partition hashing (jobs.md §4)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tsumugi.core.wire_format as wire_format_module
from tsumugi.core.wire_format import (
    format_job_id,
    hash_to_shard,
    new_local_id,
    parse_job_id,
    resolve_shard,
    shard_index_of_name,
    shard_name,
    shard_name_of,
)
from tsumugi.errors import InvalidJobIdError


def test_job_id_format_and_round_trip() -> None:
    # J-12
    job_id = format_job_id("MAIL", 0, "k3x9abc")
    assert job_id == "MAIL#0:k3x9abc"
    assert parse_job_id(job_id) == ("MAIL", 0, "k3x9abc")
    assert shard_name_of(job_id) == "MAIL#0"


@pytest.mark.parametrize("binding", ["MAIL", "_x", "a1_B2"])
def test_valid_binding_names(binding: str) -> None:
    # J-13
    assert shard_name(binding, 3) == f"{binding}#3"


@pytest.mark.parametrize("binding", ["", "1MAIL", "MA-IL", "MA#IL", "MA:IL", "MA IL", "メール"])
def test_invalid_binding_names_quote_the_value(binding: str) -> None:
    # J-13: the message carries the JSON-quoted value
    with pytest.raises(InvalidJobIdError) as info:
        shard_name(binding, 0)
    assert str(info.value).startswith('invalid binding name: "')
    assert str(info.value).endswith("(alphanumeric, must start with a letter or underscore)")


@pytest.mark.parametrize("shard", [-1, True, 1.5])
def test_invalid_shard_index(shard: object) -> None:
    # J-14
    with pytest.raises(InvalidJobIdError, match=r"^invalid shard: .* \(non-negative integer\)$"):
        shard_name("MAIL", shard)  # type: ignore[arg-type]


def test_invalid_local_id() -> None:
    # J-15
    with pytest.raises(InvalidJobIdError, match=r'^invalid localId: "a b"$'):
        format_job_id("MAIL", 0, "a b")


def test_generated_local_ids_have_the_cuid2_shape() -> None:
    # J-15: 24 chars, lowercase letters and digits, a letter first
    ids = {new_local_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[a-z][a-z0-9]{23}", i) for i in ids)


@pytest.mark.parametrize(
    ("job_id", "message"),
    [
        ("MAIL0:x", 'missing "#": "MAIL0:x"'),
        ("MAIL#0", 'missing ":": "MAIL#0"'),
        ("MAIL#0:a:b", 'invalid localId: "a:b"'),
        ("MA#IL#0:x", 'shard is not a number: "IL#0"'),
        ("MAIL#:x", 'shard is not a number: ""'),
        ("MAIL#-1:x", 'shard is not a number: "-1"'),
        ("1A#0:x", "invalid binding name"),
    ],
)
def test_parse_rejects_malformed_ids(job_id: str, message: str) -> None:
    # J-16
    with pytest.raises(InvalidJobIdError) as info:
        parse_job_id(job_id)
    assert str(info.value).startswith(message)


def test_shard_learns_its_index_from_its_name() -> None:
    # J-17
    assert shard_index_of_name("MAIL#3") == 3
    assert shard_index_of_name("weird") == 0


@pytest.mark.parametrize(
    ("key", "h", "mods"),
    [
        ("", 2166136261, (1, 1, 5, 5)),
        ("cust-1", 1492871556, (0, 0, 4, 4)),
        ("order:9", 593456426, (0, 2, 2, 10)),
        ("customer:c1", 3471441965, (1, 1, 5, 13)),
        ("日本", 1610399396, (0, 0, 4, 4)),
        ("😀", 3409036472, (0, 0, 0, 8)),
    ],
)
def test_fnv1a_over_utf16_code_units_matches_the_vectors(key: str, h: int, mods: tuple[int, ...]) -> None:
    # J-18
    assert tuple(hash_to_shard(key, n) for n in (2, 4, 8, 16)) == mods
    assert hash_to_shard(key, 2**32) == h


@given(st.text(), st.integers(min_value=2, max_value=64))
def test_hash_is_always_a_valid_shard(key: str, shards: int) -> None:
    # J-18
    assert 0 <= hash_to_shard(key, shards) < shards


def test_resolve_shard_rules() -> None:
    # J-19: one shard ignores the key; split bindings require it; "" is a valid key
    assert resolve_shard("MAIL", 1, "anything") == 0
    assert resolve_shard("MAIL", 4, "") == hash_to_shard("", 4)
    with pytest.raises(InvalidJobIdError) as info:
        resolve_shard("MAIL", 4, None)
    assert str(info.value) == (
        "MAIL is split into shards=4 and requires partitionKey, omitting it drops the per-key guarantees"
    )


def test_generated_local_ids_sort_by_creation_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # ADR-0107: a later millisecond sorts after an earlier one, whatever the random part
    now_ns = [1_700_000_000_000 * 1_000_000]
    monkeypatch.setattr(wire_format_module.time, "time_ns", lambda: now_ns[0])
    earlier = [new_local_id() for _ in range(50)]
    now_ns[0] += 1_000_000
    later = [new_local_id() for _ in range(50)]
    assert max(earlier) < min(later)
    assert all(re.fullmatch(r"[a-z][a-z0-9]{23}", i) for i in earlier + later)  # J-15


def test_generated_local_ids_follow_the_clock_back_as_well(monkeypatch: pytest.MonkeyPatch) -> None:
    # ADR-0107: the stamp is the clock's at each call, even when the clock steps back
    now_ns = [1_700_000_000_000 * 1_000_000]
    monkeypatch.setattr(wire_format_module.time, "time_ns", lambda: now_ns[0])
    first = new_local_id()
    now_ns[0] += 1_000_000_000  # a second: past the stamp's last 3 bits, which share the 10th digit
    later = new_local_id()
    now_ns[0] -= 1_000_000_000
    again = new_local_id()
    assert first[:9] == again[:9] != later[:9]
    assert max(first, again) < later
