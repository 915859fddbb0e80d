"""The queue consumer: claim, perform under a deadline, heartbeat, report, ack."""
# J-116..J-119

from tsumugi.execution.consumer import handle_batch
from tsumugi.performer import PerformersResolver, has_perform

__all__ = ["PerformersResolver", "handle_batch", "has_perform"]
