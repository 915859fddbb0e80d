"""Job ids, shard names and partition hashing (J-12..J-19)."""

from __future__ import annotations

import base64
import re
import secrets
from typing import Final, NamedTuple

from tsumugi.core.jsonwire import quote
from tsumugi.errors import InvalidJobIdError

_BINDING_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LOCAL_ID_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_DIGITS_RE: Final = re.compile(r"[0-9]+")

_FNV_OFFSET: Final = 0x811C9DC5  # 32-bit FNV-1a offset basis (J-18)
_FNV_PRIME: Final = 0x01000193  # 32-bit FNV prime
_MASK32: Final = 0xFFFFFFFF

_LOWER: Final = "abcdefghijklmnopqrstuvwxyz"
LOCAL_ID_LENGTH: Final = 24  # the cuid2 default length the original generates (J-15)


class ParsedJobId(NamedTuple):
    binding: str
    shard: int
    local_id: str


def validate_binding(binding: str) -> str:
    """Return ``binding`` if it is a valid binding name, else raise (J-13)."""
    if not isinstance(binding, str) or not _BINDING_RE.fullmatch(binding):
        raise InvalidJobIdError(
            f"invalid binding name: {quote(str(binding))} "
            "(alphanumeric, must start with a letter or underscore)"
        )
    return binding


def validate_shard(shard: int) -> int:
    """Return ``shard`` if it is a non-negative integer, else raise (J-14)."""
    if isinstance(shard, bool) or not isinstance(shard, int) or shard < 0:
        raise InvalidJobIdError(f"invalid shard: {shard} (non-negative integer)")
    return shard


def validate_local_id(local_id: str) -> str:
    """Return ``local_id`` if it matches ``^[A-Za-z0-9_-]+$``, else raise (J-15)."""
    if not isinstance(local_id, str) or not _LOCAL_ID_RE.fullmatch(local_id):
        raise InvalidJobIdError(f"invalid localId: {quote(str(local_id))}")
    return local_id


def new_local_id() -> str:
    """A fresh local id shaped like cuid2: 24 chars, lowercase letters and digits, a letter first.

    15 random bytes in base32 are exactly 24 characters of ``a-z2-7`` (119 random bits once the first
    is forced to a letter); one call to the OS generator instead of 24 keeps enqueue cheap.
    """
    raw = secrets.token_bytes(16)
    body = base64.b32encode(raw[:15]).decode("ascii").lower()
    return _LOWER[raw[15] % 26] + body[1:]


def shard_name(binding: str, shard: int) -> str:
    """The Durable Object name of a shard: ``<binding>#<shard>`` (J-17)."""
    return f"{validate_binding(binding)}#{validate_shard(shard)}"


def format_job_id(binding: str, shard: int, local_id: str) -> str:
    """``<binding>#<shard>:<localId>`` (J-12)."""
    return f"{shard_name(binding, shard)}:{validate_local_id(local_id)}"


def parse_job_id(job_id: str) -> ParsedJobId:
    """Split a job id: the first ``#``, then the first ``:`` after it (J-16)."""
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
    """A shard's own index: the digits after the last ``#`` of its name, else 0 (J-17)."""
    tail = name.rpartition("#")[2]
    return int(tail) if _DIGITS_RE.fullmatch(tail) else 0


def hash_to_shard(key: str, shards: int) -> int:
    """32-bit FNV-1a over the UTF-16 code units of ``key``, modulo ``shards`` (J-18). Never change."""
    if shards <= 1:
        return 0
    h = _FNV_OFFSET
    data = key.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * _FNV_PRIME) & _MASK32
    return h % shards


def resolve_shard(binding: str, shards: int, partition_key: str | None) -> int:
    """The shard index a new job of ``binding`` goes to (J-19)."""
    if shards <= 1:
        return 0
    if partition_key is None:
        raise InvalidJobIdError(
            f"{binding} is split into shards={shards} and requires partitionKey, "
            "omitting it drops the per-key guarantees"
        )
    return hash_to_shard(partition_key, shards)
