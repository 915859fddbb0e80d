"""Flows as pure data and decisions: ids, the definition model, validation, ``advance``."""
