"""JSON as the original writes and measures it (J-3, A-10)."""

from __future__ import annotations

import math

import pytest

from tsumugi.core.jsonwire import dumps, loads, quote, utf16_len


def test_compact_and_unescaped() -> None:
    # J-3: no whitespace, non-ASCII left as is
    assert dumps({"a": [1, 2], "b": "日本"}) == '{"a":[1,2],"b":"日本"}'


def test_nan_and_infinity_become_null() -> None:
    # J-3: JS JSON.stringify prints null for non-finite numbers
    assert dumps([math.nan, math.inf, -math.inf, 1.5]) == "[null,null,null,1.5]"


def test_integral_floats_print_like_javascript() -> None:
    # J-3, A-10
    assert dumps({"x": 1.0, "y": -0.0, "z": 2.5}) == '{"x":1,"y":0,"z":2.5}'


def test_lengths_count_utf16_code_units() -> None:
    # J-3: an astral character counts twice
    assert utf16_len("abc") == 3
    assert utf16_len("😀") == 2
    assert utf16_len("日本") == 2


def test_unserialisable_values_raise() -> None:
    # J-27: a payload that cannot be serialised is an enqueue error
    with pytest.raises(TypeError):
        dumps({"x": object()})


def test_quote_and_round_trip() -> None:
    assert quote('a"b') == '"a\\"b"'
    assert loads(dumps({"k": [None, True]})) == {"k": [None, True]}
