"""Typed payloads and results: a performer's declared types, checked and converted (ADR-0140)."""

from tsumugi.payloads.performer_types import PerformerTypes, dump_result, types_of

__all__ = ["PerformerTypes", "dump_result", "types_of"]
