"""What the engine writes on the wire: JSON text as JavaScript writes it, the bound on a payload's size,
any Python value made JSON, and job ids and shard names.

JSON text is compact and unescaped, NaN becomes null and lengths are counted in UTF-16 code units, as the
original writes and measures it. A payload must fit the Cloudflare Queues message that carries it to the
consumer (ADR-0133). Job ids are ``<binding>#<shard>:<localId>``.
"""
# J-3, J-12..J-19, A-10

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from enum import Enum
from json import encoder as _json_encoder
from typing import Any, Final, NamedTuple, Protocol, TypeGuard, cast

from tsumugi.core.js_numbers import js_text
from tsumugi.core.json_types import JsonValue
from tsumugi.core.mismatch import Mismatch
from tsumugi.errors import InvalidJobIdError, PayloadTooLargeError

# ---------------------------------------------------------------- JSON text (J-3)

_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# The C encoder the line above builds on every call, built once (ADR-0120). Without circular-reference
# markers: circular data recurses until RecursionError.
_make_c_encoder = getattr(_json_encoder, "c_make_encoder", None)
_c_encode = (
    _make_c_encoder(
        None, _encoder.default, _json_encoder.encode_basestring, None, ":", ",", False, False, False
    )
    if _make_c_encoder is not None
    else None
)
# JSON.stringify is well-formed (ES2019): a lone surrogate prints as a \uXXXX escape, so the text is valid
# UTF-8 and parses back to the same string. Only text that is not ASCII can hold one.
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _escape_lone_surrogates(text: str) -> str:
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _maybe_differs(text: str) -> bool:
    """Whether a float in ``text`` may print differently in JavaScript: ``1.0`` or an exponent.

    A string that merely contains ``.0`` or ``e-`` only costs the careful pass.
    """
    return ".0" in text or "e-" in text or "e+" in text


def dumps(value: object) -> str:
    """Serialize like JS ``JSON.stringify``: compact, unescaped, numbers as JavaScript prints them.

    Raises TypeError when the value cannot be serialized (RecursionError for circular data).
    """
    #
    try:
        text = "".join(_c_encode(value, 0)) if _c_encode is not None else _encoder.encode(value)
    except ValueError:  # NaN or infinity: the careful pass prints null
        return _escape_lone_surrogates(js_text(value))
    # Python's float repr differs from JavaScript's for integral floats and exponents; when the text
    # shows neither, it is already what JS prints and the careful pass is skipped (ADR-0120).
    return _escape_lone_surrogates(js_text(value) if _maybe_differs(text) else text)


def loads(text: str) -> Any:
    """``json.loads``; ``Any`` as json's own, since callers across the engine read fields straight off it.

    ``load_value`` is the same with the honest type, for code that narrows what it reads.
    """
    return json.loads(text)


def load_value(text: str) -> JsonValue:
    """``json.loads``, typed as the JSON value it returns."""
    value: JsonValue = json.loads(text)
    return value


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit the original's limits are written in."""
    # J-3
    return len(text.encode("utf-16-le", "surrogatepass")) // 2  # a lone surrogate is one unit too


def quote(value: str) -> str:
    """The JSON-quoted form used inside error messages."""
    # J-13
    return dumps(value)


# ---------------------------------------------------------------- a payload's size (ADR-0133)

# A Cloudflare Queues message holds at most 128 KiB and the dispatch message carries the payload; 8 KiB are
# left for the rest of the message (ids, binding, attempt, trace context) and the queue's own envelope.
MAX_PAYLOAD_BYTES: Final = 120 * 1024
_UTF8_MAX_BYTES_PER_CHAR: Final = 4


def payload_text_size(text: str) -> int | None:
    """The UTF-8 size of a payload's JSON text when it is over the limit, else None."""
    if len(text) * _UTF8_MAX_BYTES_PER_CHAR <= MAX_PAYLOAD_BYTES:
        return None  # cannot be over: no encoding needed
    size = len(text.encode("utf-8"))
    return size if size > MAX_PAYLOAD_BYTES else None


def check_payload_text(text: str, what: str = "payload") -> None:
    """Raise ``PayloadTooLargeError`` when the JSON text is over ``MAX_PAYLOAD_BYTES``."""
    size = payload_text_size(text)
    if size is not None:
        raise PayloadTooLargeError(
            f"{what} must not exceed {MAX_PAYLOAD_BYTES} bytes as JSON, got {size} bytes"
        )


# ---------------------------------------------------------------- any value as JSON (ADR-0140)

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_KEYS: Final = (str, int, float, bool, type(None))  # what JSON text keys are printed from (``dumps``)


class _Model(Protocol):
    """What a ``pydantic.BaseModel`` offers here."""

    def model_dump(self, *, mode: str) -> object: ...


def pydantic_model_base() -> type | None:
    """``pydantic.BaseModel`` if pydantic is loaded, else None: a value can only be a model once it is.

    Read from ``sys.modules``, so a plain app never imports pydantic (ADR-0128).
    """
    module = sys.modules.get("pydantic")
    base = getattr(module, "BaseModel", None) if module is not None else None
    return base if isinstance(base, type) else None


def _is_model(value: object) -> TypeGuard[_Model]:
    model = pydantic_model_base()
    return model is not None and isinstance(value, model)


def to_json(value: object) -> JsonValue:
    """``value`` as the JSON value the stores keep; raises ``Mismatch`` naming the first part that is not.

    A pydantic model becomes its JSON dump, a dataclass its fields, an enum member its value, a tuple a
    list; ``str``, ``int``, ``float``, ``bool``, ``None``, lists and dicts with JSON keys stay as they are.
    Anything else (a datetime, a set, bytes, an arbitrary object) is refused with its path, so a result is
    never stored as a silent ``null``. Containers are copied only where something changed.
    """
    try:
        walked = _walk(value)
    except RecursionError:
        raise Mismatch.at_root("is nested too deeply or refers to itself") from None
    # The walk hands back its input, or a copy with parts converted, only once every part is JSON;
    # mypy cannot follow a check on ``type(value)``, so the claim is made here, once.
    return cast("JsonValue", walked)


def _walk(value: object) -> object:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if type(value) is dict:  # not ``kind is dict``: mypy narrows only this spelling
        return _mapping(value, value)
    if type(value) is list:
        return _items(value, value)
    return _convert(value)


def _mapping(value: Mapping[object, object], original: object) -> object:
    changed: dict[object, object] | None = None
    for key, item in value.items():
        if not isinstance(key, _KEYS):
            raise Mismatch.at_root(f"has a key of type {type(key).__name__}, which JSON cannot hold")
        try:
            converted = _walk(item)
        except Mismatch as mismatch:
            raise mismatch.under(str(key)) from None
        if converted is not item:
            if changed is None:
                changed = dict(value)
            changed[key] = converted
    if changed is not None:
        return changed
    return original


def _items(value: Sequence[object], original: object) -> object:
    changed: list[object] | None = None
    for index, item in enumerate(value):
        try:
            converted = _walk(item)
        except Mismatch as mismatch:
            raise mismatch.under(index) from None
        if converted is not item:
            if changed is None:
                changed = list(value)
            changed[index] = converted
    if changed is not None:
        return changed
    return original


def _convert(value: object) -> object:
    if isinstance(value, Enum):
        return _walk(value.value)
    if _is_model(value):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields: dict[object, object] = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _mapping(fields, fields)
    if isinstance(value, Mapping):
        return _mapping(value, dict(value))
    if isinstance(value, list | tuple):
        return _items(value, list(value) if isinstance(value, tuple) else value)
    if isinstance(value, str | int | float):
        return value  # a str, int or float subclass prints as its base type
    raise Mismatch.at_root(f"{type(value).__name__} is not JSON")


# ---------------------------------------------------------------- job ids and shard names (J-12..J-19)

_BINDING_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOCAL_ID_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_DIGITS_RE: Final = re.compile(r"[0-9]+")

_FNV_OFFSET: Final = 0x811C9DC5  # 32-bit FNV-1a offset basis (J-18)
_FNV_PRIME: Final = 0x01000193  # 32-bit FNV prime
_MASK32: Final = 0xFFFFFFFF

LOCAL_ID_LENGTH: Final = 24  # the cuid2 default length the original generates (J-15)
# Base32 digits in ASCII order ("2" < "7" < "a" < "z"), so ids sort by value.
_DIGITS: Final = "234567abcdefghijklmnopqrstuvwxyz"
# The stamp is 43 bits of milliseconds (278 years) plus 6 << 43, so its first digit is a letter (J-15).
_STAMP_SPAN: Final = 1 << 43
_STAMP_BASE: Final = 6 << 43
_STAMP_DIGITS: Final = 9  # whole digits of the 48-bit stamp; its last 3 bits share the 10th digit
# Random bytes to digits with bytes.translate, in C: a byte's low 5 bits are one digit (256 = 8 * 32, so
# every digit stays equally likely); the 10th digit takes a byte's low 2 bits under the stamp's last 3.
_RANDOM_DIGIT: Final = bytes(ord(_DIGITS[b & 31]) for b in range(256))
_TENTH_DIGIT: Final = tuple(
    bytes(ord(_DIGITS[(low3 << 2) | (b & 3)]) for b in range(256)) for low3 in range(8)
)


_last_head: tuple[int, str] = (-1, "")  # the last stamp ``new_local_ids`` wrote, and its digits
# ``new_local_id`` makes ids 32 at a time, and hands the rest out in the same millisecond and process.
_SPARE_IDS: Final = 32
_spare: tuple[tuple[int, int], list[str]] = ((-1, -1), [])


class ParsedJobId(NamedTuple):
    binding: str
    shard: int
    local_id: str


def validate_binding(binding: str) -> str:
    """Return ``binding`` if it is a valid binding name, else raise."""
    # J-13
    if not isinstance(binding, str) or not _BINDING_RE.fullmatch(binding):
        raise InvalidJobIdError(
            f"invalid binding name: {quote(str(binding))} "
            "(alphanumeric, must start with a letter or underscore)"
        )
    return binding


def validate_shard(shard: int) -> int:
    """Return ``shard`` if it is a non-negative integer, else raise."""
    # J-14
    if isinstance(shard, bool) or not isinstance(shard, int) or shard < 0:
        raise InvalidJobIdError(f"invalid shard: {shard} (non-negative integer)")
    return shard


def validate_local_id(local_id: str) -> str:
    """Return ``local_id`` if it matches ``^[A-Za-z0-9_-]+$``, else raise."""
    # J-15
    if not isinstance(local_id, str) or not _LOCAL_ID_RE.fullmatch(local_id):
        raise InvalidJobIdError(f"invalid localId: {quote(str(local_id))}")
    return local_id


def new_local_id() -> str:
    """A fresh local id shaped like cuid2: 24 chars, lowercase letters and digits, a letter first.

    ADR-0107: the first 48 bits are the time in milliseconds and the alphabet is in ASCII order, so ids
    sort by creation time. A shard's job table is keyed by id: new rows then land on the last page and
    the jobs a tick dispatches sit on a few neighbouring pages, instead of one random page per job.
    The other 72 bits are random. 15 bytes in base32 are exactly 24 characters.
    """
    # J-15
    global _spare
    now = (time.time_ns() // 1_000_000, os.getpid())  # a forked child never takes its parent's ids
    made_at, spare = _spare
    if made_at != now or not spare:
        spare = new_local_ids(_SPARE_IDS)
        _spare = (now, spare)
    try:
        return spare.pop()  # atomic: two threads never take the same id
    except IndexError:  # another thread took the last one in between
        return new_local_ids(1)[0]


def new_local_ids(count: int) -> list[str]:
    """``count`` fresh local ids (``new_local_id``): one call to the OS generator, digits made in C."""
    global _last_head
    stamp = (time.time_ns() // 1_000_000) % _STAMP_SPAN + _STAMP_BASE
    last_stamp, head = _last_head
    if stamp != last_stamp:  # ids made within one millisecond share the digits of its stamp
        head = "".join(_DIGITS[(stamp >> (43 - 5 * at)) & 31] for at in range(_STAMP_DIGITS))
        _last_head = (stamp, head)  # one tuple, swapped whole: a thread reads the old or the new
    width = LOCAL_ID_LENGTH - _STAMP_DIGITS  # 15 digits: 2 + 14 * 5 = 72 random bits
    noise = os.urandom(width * count)  # what secrets.token_bytes returns, without importing secrets
    tenth = noise[::width].translate(_TENTH_DIGIT[stamp & 7]).decode("ascii")
    rest = noise.translate(_RANDOM_DIGIT).decode("ascii")
    return [head + tenth[k] + rest[k * width + 1 : (k + 1) * width] for k in range(count)]


def shard_name(binding: str, shard: int) -> str:
    """The Durable Object name of a shard: ``<binding>#<shard>``."""
    # J-17
    return f"{validate_binding(binding)}#{validate_shard(shard)}"


def format_job_id(binding: str, shard: int, local_id: str) -> str:
    """``<binding>#<shard>:<localId>``."""
    # J-12
    return f"{shard_name(binding, shard)}:{validate_local_id(local_id)}"


def parse_job_id(job_id: str) -> ParsedJobId:
    """Split a job id: the first ``#``, then the first ``:`` after it."""
    # J-16
    if not isinstance(job_id, str):
        raise InvalidJobIdError(f'missing "#": {quote(str(job_id))}')
    hash_at = job_id.find("#")
    if hash_at < 0:
        raise InvalidJobIdError(f'missing "#": {quote(job_id)}')
    colon_at = job_id.find(":", hash_at + 1)
    if colon_at < 0:
        raise InvalidJobIdError(f'missing ":": {quote(job_id)}')
    binding = validate_binding(job_id[:hash_at])
    shard_text = job_id[hash_at + 1 : colon_at]
    if not _DIGITS_RE.fullmatch(shard_text):
        raise InvalidJobIdError(f"shard is not a number: {quote(shard_text)}")
    local_id = validate_local_id(job_id[colon_at + 1 :])
    return ParsedJobId(binding, int(shard_text), local_id)


def shard_name_of(job_id: str) -> str:
    """The shard DO name that owns ``job_id``."""
    parsed = parse_job_id(job_id)
    return f"{parsed.binding}#{parsed.shard}"


def shard_index_of_name(name: str) -> int:
    """A shard's own index: the digits after the last ``#`` of its name, else 0."""
    # J-17
    tail = name.rpartition("#")[2]
    return int(tail) if _DIGITS_RE.fullmatch(tail) else 0


def hash_to_shard(key: str, shards: int) -> int:
    """32-bit FNV-1a over the UTF-16 code units of ``key``, modulo ``shards``. Never change."""
    # J-18
    if shards <= 1:
        return 0
    h = _FNV_OFFSET
    data = key.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * _FNV_PRIME) & _MASK32
    return h % shards


def resolve_shard(binding: str, shards: int, partition_key: str | None) -> int:
    """The shard index a new job of ``binding`` goes to."""
    # J-19
    if shards <= 1:
        return 0
    if partition_key is None:
        raise InvalidJobIdError(
            f"{binding} is split into shards={shards} and requires partitionKey, "
            "omitting it drops the per-key guarantees"
        )
    return hash_to_shard(partition_key, shards)
