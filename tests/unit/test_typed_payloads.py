"""Payload and result types checked with the standard library (ADR-0140).

What a user sees: a payload that fits its type is stored as JSON and comes back as the type; one that does
not is refused with every bad field named; a result that is not JSON is refused with its path.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Annotated, Any, Literal, NewType, NotRequired, TypedDict

import pytest

from tsumugi.core.mismatch import Mismatch
from tsumugi.core.wire_format import to_json
from tsumugi.errors import ConfigurationError, InvalidPayloadError, ResultNotJsonError
from tsumugi.payloads import dump_result, types_of
from tsumugi.payloads.type_compile import NeedsPydantic, compile_type
from tsumugi.performer import JobContext, Performer


class Tone(enum.Enum):
    WARM = "warm"
    COOL = "cool"


@dataclasses.dataclass
class Address:
    city: str
    zip: str | None = None


@dataclasses.dataclass
class Order:
    id: int
    lines: list[str]
    address: Address
    tone: Tone = Tone.WARM
    weight: float = 0.0


class Mail(TypedDict):
    to: str
    cc: NotRequired[list[str]]


@dataclasses.dataclass
class Tree:
    name: str
    children: list[Tree] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Stamped:
    at: datetime.datetime


UserId = NewType("UserId", int)


class Ship(Performer[Order, None]):
    async def perform(self, payload: Order, ctx: JobContext) -> None:
        return None


class Send(Performer):
    async def perform(self, payload: Mail, ctx: JobContext) -> dict[str, int]:
        return {"sent": 1}


ORDER = {"id": 7, "lines": ["a"], "address": {"city": "Kyoto"}}


def encode(tp: Any, value: Any) -> Any:
    return compile_type(tp).encode(value)


def decode(tp: Any, data: Any) -> Any:
    return compile_type(tp).decode(data)


def problems(tp: Any, value: Any, *, decoding: bool = False) -> list[tuple[str, str]]:
    node = compile_type(tp)
    with pytest.raises(Mismatch) as caught:
        node.decode(value) if decoding else node.encode(value)
    return list(caught.value.described("payload"))


def test_a_dataclass_payload_is_stored_as_json_and_performed_as_the_dataclass() -> None:
    order = Order(7, ["a"], Address("Kyoto"))
    stored = encode(Order, order)
    assert stored == {"id": 7, "lines": ["a"], "address": {"city": "Kyoto", "zip": None}, "tone": "warm",
                      "weight": 0.0}  # fmt: skip
    assert decode(Order, stored) == order
    assert decode(Order, ORDER) == Order(7, ["a"], Address("Kyoto"))  # defaults fill the rest
    assert isinstance(decode(Order, {**ORDER, "weight": 2}).weight, float)  # JSON has one number type


def test_every_bad_field_is_named_with_its_path() -> None:
    assert problems(Order, {"id": "7", "lines": ["a", 2], "address": {}, "tone": "hot", "extra": 1}) == [
        ("extra", "unexpected field"),
        ("id", "expected int, got str"),
        ("lines[1]", "expected str, got int"),
        ("address.city", "field required"),
        ("tone", "expected one of 'warm', 'cool', got 'hot'"),
    ]
    assert problems(Order, 5) == [("payload", "expected Order, got int")]


def test_decoding_ignores_fields_the_type_no_longer_declares() -> None:
    # A job enqueued before a field was removed still runs.
    assert decode(Order, {**ORDER, "gone": True}) == Order(7, ["a"], Address("Kyoto"))
    assert problems(Order, {"lines": []}, decoding=True) == [
        ("id", "field required"),
        ("address", "field required"),
    ]


def test_typed_dicts_check_required_and_optional_keys() -> None:
    assert encode(Mail, {"to": "a"}) == {"to": "a"}
    assert decode(Mail, {"to": "a", "cc": ["b"]}) == {"to": "a", "cc": ["b"]}
    assert problems(Mail, {"too": "a"}) == [("too", "unexpected field"), ("to", "field required")]


@pytest.mark.parametrize(
    ("tp", "good", "bad", "problem"),
    [
        (int, 3, True, "expected int, got bool"),
        (int, 3.0, 3.5, "expected int, got 3.5"),
        (float, 1, "1", "expected float, got str"),
        (bool, False, 0, "expected bool, got int"),
        (str, "x", None, "expected str, got null"),
        (None, None, 0, "expected None, got int"),
        (list[int], [1, 2], (1, "2"), "expected int, got str"),
        (dict[str, int], {"a": 1}, {"a": "1"}, "expected int, got str"),
        (tuple[int, str], [1, "a"], [1], "expected 2 items, got 1"),
        (Literal["a", 1], 1, True, "expected one of 'a', 1, got True"),
        (int | None, None, "x", "expected int, got str"),
        (int | str, "x", 1.5, "expected int | str, got float"),
        (Annotated[int, "doc"], 1, "1", "expected int, got str"),
        (UserId, 1, "1", "expected int, got str"),
        (Any, {"a": [1]}, {1, 2}, "set is not JSON"),
    ],
)
def test_json_types(tp: Any, good: Any, bad: Any, problem: str) -> None:
    assert encode(tp, good) == (list(good) if isinstance(good, tuple) else good)
    assert [message for _, message in problems(tp, bad)] == [problem]


def test_a_dataclass_may_refer_to_itself() -> None:
    tree = Tree("root", [Tree("leaf")])
    assert decode(Tree, encode(Tree, tree)) == tree


def test_types_only_pydantic_knows_are_handed_to_it() -> None:
    with pytest.raises(NeedsPydantic):
        compile_type(Stamped)  # a datetime field
    with pytest.raises(NeedsPydantic):
        compile_type(dict[int, str])  # JSON object keys are strings


def test_performer_types_come_from_the_generic_parameters_or_from_perform() -> None:
    assert types_of(Ship).payload_type is Order
    assert types_of(Send).payload_type is Mail
    assert types_of(Send).result_type == dict[str, int]

    class Plain(Performer):
        async def perform(self, payload: Any, ctx: JobContext) -> Any:
            return payload

    assert types_of(Plain).payload_codec is None  # untyped: payloads are plain JSON
    assert not types_of(Plain).decodes


def test_generic_subclasses_pass_their_parameters_on() -> None:
    class Base(Performer[Any, Any]):
        pass

    class Middle(Performer[Mail, Any]):
        pass

    class Leaf(Middle):
        async def perform(self, payload: Mail, ctx: JobContext) -> None:
            return None

    assert types_of(Leaf).payload_type is Mail
    assert types_of(Base).payload_codec is None


def test_a_payload_typed_object_is_any_json_value_and_is_performed_as_stored() -> None:
    class Loose(Performer):
        async def perform(self, payload: object, ctx: JobContext) -> None:
            return None

    types = types_of(Loose)
    assert types.encode_payload("LOOSE", (1, Tone.COOL)) == [1, "cool"]  # converted, as a result is
    with pytest.raises(InvalidPayloadError) as caught:
        types.encode_payload("LOOSE", {"at": {1, 2}})
    assert str(caught.value) == "LOOSE: the payload does not match object: at: set is not JSON"
    # Decided once per class: the consumer hands the stored JSON to perform without a decoding step.
    assert not types.decodes and types_of(Ship).decodes


def test_payload_errors_name_the_binding_the_type_and_the_fields() -> None:
    with pytest.raises(InvalidPayloadError) as caught:
        types_of(Ship).encode_payload("SHIP", {"id": 1})
    assert str(caught.value) == (
        "SHIP: the payload does not match Order: lines: field required; address: field required"
    )
    assert caught.value.issues == (("lines", "field required"), ("address", "field required"))


def test_results_are_dumped_to_json_or_refused() -> None:
    assert dump_result("B", Order(1, [], Address("x"))) == {
        "id": 1,
        "lines": [],
        "address": {"city": "x", "zip": None},
        "tone": Tone.WARM.value,
        "weight": 0.0,
    }
    plain = {"a": [1, 2.5, None, True]}
    assert dump_result("B", plain) is plain  # nothing to convert: not copied
    assert dump_result("B", (1, Tone.COOL)) == [1, "cool"]
    with pytest.raises(ResultNotJsonError) as caught:
        dump_result("B", {"at": [datetime.datetime(2025, 1, 1)]})
    assert str(caught.value) == (
        "B: the result is not JSON: at[0]: datetime is not JSON "
        "(return JSON values, a dataclass or a pydantic model)"
    )
    with pytest.raises(ResultNotJsonError, match="result: set is not JSON"):
        dump_result("B", {1, 2})


def test_self_referring_data_is_not_json() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(Mismatch, match="nested too deeply or refers to itself"):
        to_json(looped)


def test_an_annotation_that_names_nothing_fails_at_definition() -> None:
    class Broken(Performer):
        async def perform(self, payload: NoSuchType, ctx: JobContext) -> None:  # type: ignore[name-defined]  # noqa: F821
            return None

    with pytest.raises(ConfigurationError, match=r"cannot read the payload annotation of Broken\.perform"):
        types_of(Broken)


def test_only_the_payload_and_return_annotations_are_read() -> None:
    class Checked(Performer):
        async def perform(self, payload: Mail, ctx: OnlyForTypeCheckers) -> Unknown:  # type: ignore[name-defined]  # noqa: F821
            return None

    assert types_of(Checked).payload_type is Mail  # ctx's annotation is never read
    assert types_of(Checked).result_type is Any  # an unreadable result annotation only documents
