"""Which coordinators were open and not closed clean: the ones a start-up must tick (ADR-0132).

ADR-0052 keeps an alarm that is already due in memory only, and ticks every coordinator file at start
to recover one lost in a kill. For runs that means opening every run file ever created. A coordinator
can only lose a due alarm while it is open, so the runtime writes its name here when it opens and
removes it when it closes without a due alarm; a start ticks just these names, and every later alarm
is in ``alarms.sqlite3`` already.
"""

from __future__ import annotations

from pathlib import Path

from tsumugi.runtimes.local.sqlite_files import open_database

_SCHEMA = "CREATE TABLE IF NOT EXISTS open_coordinator (coordinator TEXT PRIMARY KEY)"


class OpenJournal:
    """A persisted set of coordinator keys (``"runs/<id>"``), mirrored in memory so a repeat costs nothing."""

    def __init__(self, path: Path) -> None:
        self.created = not path.exists()  # a state directory from before the journal: nothing is listed
        self._db = open_database(path)
        self._db.execute(_SCHEMA)
        self._keys = {str(row[0]) for row in self._db.execute("SELECT coordinator FROM open_coordinator")}

    def names(self, kind: str) -> list[str]:
        """The listed coordinators of ``kind``, by name."""
        prefix = f"{kind}/"
        return sorted(key[len(prefix) :] for key in self._keys if key.startswith(prefix))

    def opened(self, key: str) -> None:
        if key not in self._keys:
            self._db.execute("INSERT OR IGNORE INTO open_coordinator (coordinator) VALUES (?)", (key,))
            self._keys.add(key)

    def closed(self, key: str) -> None:
        if key in self._keys:
            self._db.execute("DELETE FROM open_coordinator WHERE coordinator = ?", (key,))
            self._keys.discard(key)

    def close(self) -> None:
        self._db.close()
