"""The queue consumer: claim, perform under a deadline, heartbeat, report, ack."""
# J-116..J-119

from tsumugi.execution.attempt import PerformersResolver, has_perform
from tsumugi.execution.consumer import handle_batch

__all__ = ["PerformersResolver", "handle_batch", "has_perform"]
