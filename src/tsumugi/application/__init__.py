"""define_tsumugi(): config objects, typed enqueue paths, queue/scheduled handlers."""

from tsumugi.application.definition import TsumugiDefinition
from tsumugi.application.tsumugi import BoundJobs, Tsumugi, define_tsumugi

__all__ = ["BoundJobs", "Tsumugi", "TsumugiDefinition", "define_tsumugi"]
