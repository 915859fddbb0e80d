"""None binds as NULL without sqlite3's failed adapter lookup (ADR-0166); imported by every local store.

sqlite3 looks for an adapter for every bound value that is not exactly an int, float, str or bytes; for
None it finds none, and each miss raises and discards an AttributeError inside the module (a NULL column
cost more to bind than a text one). An adapter of None to itself is found at once. An empty dict's
``get`` is a C callable that returns None for any value: what is stored does not change, only the cost.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Final

_NO_VALUES: Final[dict[None, None]] = {}
_as_null: Final[Callable[[None], None]] = _NO_VALUES.get
sqlite3.register_adapter(type(None), _as_null)
