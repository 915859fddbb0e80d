"""The package version, in one place: pyproject reads it (hatch), and so does a Worker without metadata."""

__version__ = "0.1.0"
