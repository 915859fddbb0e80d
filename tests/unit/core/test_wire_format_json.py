"""JSON as the original writes and measures it (J-3, A-10)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsumugi.core.js_numbers import js_text
from tsumugi.core.wire_format import dumps, loads, quote, utf16_len


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


# Node's JSON.stringify of the same list (node -e 'console.log(JSON.stringify([...]))'), pasted verbatim.
NUMBER_VECTORS = [
    (1.0, "1"), (-0.0, "0"), (2.5, "2.5"), (1e16, "10000000000000000"), (2.0**53, "9007199254740992"),
    (1.2345678901234568e20, "123456789012345680000"), (1.5e-7, "1.5e-7"), (1e21, "1e+21"), (1e-6, "0.000001"),
    (1e-7, "1e-7"), (123.456, "123.456"), (0.1, "0.1"), (-1e-7, "-1e-7"), (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (1e20, "100000000000000000000"),
    (123e-20, "1.23e-18"), (0.000001234, "0.000001234"), (-1.5e300, "-1.5e+300"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "javascript"), NUMBER_VECTORS)
def test_numbers_print_as_javascript_prints_them(value: float, javascript: str) -> None:
    # J-3, A-10: JSON.stringify lays the shortest digits out positionally from 1e-6 up to 1e21
    assert dumps(value) == javascript
    assert dumps({"n": [value]}) == '{"n":[' + javascript + "]}"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_round_trips(value: float) -> None:
    # J-27: the performer receives the JSON round-trip of what was enqueued; JavaScript reads every
    # number back as a double
    assert float(loads(dumps(value))) == value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(alphabet='ae.0+-1 "\\\u00e9'),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


@given(json_values)
def test_the_fast_path_prints_what_the_careful_pass_prints(value: object) -> None:
    # ADR-0120: skipping the careful pass never changes the text
    assert dumps(value) == js_text(value)
