"""``ports.DispatchQueue`` over the ``TSUMUGI_QUEUE`` producer binding, within the Queues limits."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from tsumugi.core import wire_format
from tsumugi.core.json_types import JsonMapping, JsonValue
from tsumugi.errors import QueueMessageTooLargeError
from tsumugi.runtimes.cloudflare.js_conversion import to_js_value, to_py_value
from tsumugi.runtimes.cloudflare.js_objects import JsQueueMessage, MessageBatch, QueueBinding

# Cloudflare Queues limits: sendBatch takes at most 100 messages (J-161) and 256 KB in all; one message
# may hold 128 KB. A small allowance per message covers the envelope Queues adds to each body.
MAX_BATCH_MESSAGES: Final = 100
MAX_BATCH_BYTES: Final = 256 * 1024
MAX_MESSAGE_BYTES: Final = 128 * 1024
MESSAGE_OVERHEAD_BYTES: Final = 100


def message_size_bytes(message: JsonMapping) -> int:
    """The size Queues counts for one JSON body, plus the per-message allowance."""
    return len(wire_format.dumps(message).encode("utf-8")) + MESSAGE_OVERHEAD_BYTES


def batch_chunks(messages: Sequence[JsonMapping]) -> Iterator[list[JsonMapping]]:
    """Split messages, in order, into sendBatch calls that each respect both limits."""
    chunk: list[JsonMapping] = []
    chunk_bytes = 0
    for message in messages:
        size = message_size_bytes(message)
        if size > MAX_MESSAGE_BYTES:
            raise QueueMessageTooLargeError(
                f"queue message of {size} bytes exceeds the {MAX_MESSAGE_BYTES}-byte Queues limit"
            )
        if chunk and (len(chunk) == MAX_BATCH_MESSAGES or chunk_bytes + size > MAX_BATCH_BYTES):
            yield chunk
            chunk, chunk_bytes = [], 0
        chunk.append(message)
        chunk_bytes += size
    if chunk:
        yield chunk


class QueueProducer:
    """Sends dispatch messages as JSON bodies; ``send_batch_calls`` and ``messages_sent`` meter the cost."""

    def __init__(self, queue: QueueBinding) -> None:
        self._queue = queue
        self.send_batch_calls = 0
        self.messages_sent = 0

    async def send_batch(self, messages: Sequence[JsonMapping]) -> None:
        for chunk in batch_chunks(messages):
            entries = [{"body": message, "contentType": "json"} for message in chunk]
            await self._queue.sendBatch(to_js_value(entries))
            self.send_batch_calls += 1
            self.messages_sent += len(chunk)


class DeliveredMessage:
    """``ports.QueueMessage`` over one message of a JS ``MessageBatch``."""

    __slots__ = ("_message", "body", "id")

    def __init__(self, message: JsQueueMessage) -> None:
        self._message = message
        self.body: JsonValue = to_py_value(message.body)
        self.id = str(message.id)

    @property
    def attempts(self) -> int:
        return int(self._message.attempts)

    def ack(self) -> None:
        self._message.ack()

    def retry(self) -> None:
        self._message.retry()


def delivered_messages(batch: MessageBatch) -> list[DeliveredMessage]:
    """The messages of a JS ``MessageBatch`` as ``ports.QueueMessage`` objects."""
    return [DeliveredMessage(message) for message in batch.messages]
