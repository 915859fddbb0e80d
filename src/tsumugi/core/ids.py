"""Job ids, shard names and partition hashing."""
# J-12..J-19

from __future__ import annotations

import re
import secrets
import time
from typing import Final, NamedTuple

from tsumugi.core.jsonwire import quote
from tsumugi.errors import InvalidJobIdError

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
    return new_local_ids(1)[0]


def new_local_ids(count: int) -> list[str]:
    """``count`` fresh local ids (``new_local_id``): one call to the OS generator, digits made in C."""
    stamp = (time.time_ns() // 1_000_000) % _STAMP_SPAN + _STAMP_BASE
    head = "".join(_DIGITS[(stamp >> (43 - 5 * at)) & 31] for at in range(_STAMP_DIGITS))
    width = LOCAL_ID_LENGTH - _STAMP_DIGITS  # 15 digits: 2 + 14 * 5 = 72 random bits
    noise = secrets.token_bytes(width * count)
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
