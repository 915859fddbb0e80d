"""Every error Tsumugi raises.

The tree::

    TsumugiError
    ├── InvalidJobIdError          bad binding name, shard index, local id or job id
    ├── InvalidTransitionError     a state change the transition table forbids
    ├── TsumugiTimeoutError        an attempt outlived its timeout_ms
    ├── ConfigurationError         define_tsumugi() or a binding config is invalid
    │   ├── MissingBindingsError   the wrangler configuration is incomplete
    │   ├── InvalidConfigError     a policy, backoff, binding or notice config is malformed (+ValueError)
    │   ├── InvalidScheduleError   a schedule definition is invalid (+ValueError)
    │   └── InvalidPerformerError  a performers entry is not a Performer subclass (ADR-0140, +TypeError)
    ├── EnqueueError               an enqueue input is invalid (+ValueError)
    │   ├── PayloadTooLargeError   a payload's JSON is over the dispatch message limit (ADR-0133)
    │   └── InvalidPayloadError    a payload does not match its performer's payload type (ADR-0140)
    ├── ResultNotJsonError         perform returned a value that is not JSON (ADR-0140, +TypeError)
    ├── RequiredKeyError           a performer's required key is missing (+TypeError)
    ├── JobDroppedError            a throttle dropped the job, so enqueue has no id (ADR-0150)
    ├── PerformerSignal            raised by a performer to steer its own retry
    │   ├── PermanentFailure       fail now, whatever attempts remain
    │   └── RetryAfter             retry this failure at a chosen time
    ├── InvalidFlowError           a flow definition is invalid (+ValueError)
    ├── InvalidRunIdError          a run id does not have the required shape (+ValueError)
    ├── InvalidCronError           a cron expression is invalid or never fires (+ValueError)
    ├── UnknownMutationError       mutate_many got an action other than retry/cancel (+ValueError)
    ├── MetricsUpstreamError       the metrics store refused or timed out (502)
    ├── UnsafeIntegerError         an int beyond 2^53 about to cross into JavaScript (+ValueError)
    ├── QueueMessageTooLargeError  a dispatch message over the Queues size limit (+ValueError)
    ├── StorageFullError           a store refused a write: the database or disk is full (ADR-0133)
    ├── LocalRuntimeError          the embedded runtime cannot start
    │   ├── StateDirError          the state directory is not writable
    │   ├── AppLoadError           the APP of ``tsumugi dev`` cannot be loaded
    │   └── PortInUseError         the HTTP port is taken
    └── CommandLineError           a ``tsumugi`` command cannot proceed

Areas add their own subclasses at the end of this file, under a comment naming the area, and to this tree.
"""
# J-13..J-19, J-92, J-74, J-204, J-205, J-206, S-2, J-29, J-70, J-76, F-3..F-18, A-8, S-6..S-9, J-134, M-12
# C-3..C-6

from __future__ import annotations


class TsumugiError(Exception):
    """Root of every error Tsumugi raises."""


class InvalidJobIdError(TsumugiError):
    """A binding name, shard index, local id or job id does not have the required shape."""


class InvalidTransitionError(TsumugiError):
    """A state change that the transition table does not allow."""

    def __init__(self, from_state: str, to_state: str) -> None:
        super().__init__(f"invalid state transition: {from_state} -> {to_state}")
        self.from_state = from_state
        self.to_state = to_state


class TsumugiTimeoutError(TsumugiError):
    """An attempt did not settle within its timeout_ms (the performer keeps running)."""

    def __init__(self, job_id: str, timeout_ms: int) -> None:
        super().__init__(f"job timed out ({job_id}, {timeout_ms}ms)")
        self.job_id = job_id
        self.timeout_ms = timeout_ms


class ConfigurationError(TsumugiError):
    """define_tsumugi() was given an invalid configuration."""


class MissingBindingsError(ConfigurationError):
    """The platform bindings the configuration needs are absent; the message is the report."""


class EnqueueError(TsumugiError, ValueError):
    """An enqueue input is invalid; nothing was enqueued."""


class JobDroppedError(TsumugiError):
    """A throttle with ``on_excess="drop"`` dropped the job, so ``enqueue`` has no id to return (ADR-0150)."""


class RequiredKeyError(TsumugiError, TypeError):
    """A performer declared a key as required and the enqueue did not carry it."""


class PerformerSignal(TsumugiError):
    """Base of the exceptions a performer raises to choose what happens after a failure."""


class PermanentFailure(PerformerSignal):
    """Fail the job now, without using the remaining attempts."""

    # J-76


class RetryAfter(PerformerSignal):
    """Retry this failure at a chosen time instead of the backoff.

    Give exactly one of ``delay_ms`` (relative to the report) or ``at`` (epoch ms).
    """

    # J-76

    def __init__(self, message: str = "", *, delay_ms: int | None = None, at: int | None = None) -> None:
        if (delay_ms is None) == (at is None):
            raise ValueError("RetryAfter needs exactly one of delay_ms or at")
        if delay_ms is not None and delay_ms < 0:
            raise ValueError("RetryAfter delay_ms must not be negative")
        super().__init__(message)
        self.delay_ms = delay_ms
        self.at = at


# --------------------------------------------------------------------------- flows and schedules
class InvalidFlowError(TsumugiError, ValueError):
    """A flow definition is malformed: bad node id, unknown dependency, bad option."""

    # F-11, F-12


class InvalidRunIdError(TsumugiError, ValueError):
    """A run id, its local part or a flow name does not have the required shape."""

    # F-6, F-7


class InvalidScheduleError(ConfigurationError, ValueError):
    """A schedule definition is invalid; raised when define_tsumugi() runs."""

    # S-1, S-2


class InvalidCronError(TsumugiError, ValueError):
    """A cron expression does not follow the five-field grammar, or never fires."""

    # S-6..S-9


# --------------------------------------------------------------------------- application (config, enqueue)
class InvalidConfigError(ConfigurationError, ValueError):
    """A configuration value (policy, backoff, binding config, notice target) is malformed."""


# --------------------------------------------------------------------------- platform (Cloudflare adapter)
class UnsafeIntegerError(TsumugiError, ValueError):
    """An int beyond ±(2^53 - 1) was about to cross into JavaScript, where it cannot be held exactly."""


class QueueMessageTooLargeError(TsumugiError, ValueError):
    """A dispatch message exceeds the Queues per-message size limit (128 KB)."""


# ------------------------------------------------------------------- local runtime (runtimes/local, cli dev)
class LocalRuntimeError(TsumugiError):
    """The embedded local runtime cannot start; the message says what to fix."""


class StateDirError(LocalRuntimeError):
    """The state directory cannot be created or written."""


class AppLoadError(LocalRuntimeError):
    """The APP given to ``tsumugi dev`` cannot be imported or defines no Tsumugi object."""


class PortInUseError(LocalRuntimeError):
    """The HTTP port ``tsumugi dev`` should listen on is taken by another process."""


# --------------------------------------------------------------------------- REST API (api.md A-68, M-12)
class MetricsUpstreamError(TsumugiError):
    """The metrics store refused or timed out; REST answers 502 with this message."""

    # M-12


# --------------------------------------------------------------------------- job shard engine
class UnknownMutationError(TsumugiError, ValueError):
    """``mutate_many`` was asked for an action other than ``retry`` or ``cancel``."""

    # J-134


# --------------------------------------------------------------------------- CLI: init, add-performer, doctor
class CommandLineError(TsumugiError):
    """A ``tsumugi`` command cannot proceed; printed as ``tsumugi: <message>``, exit 1."""

    # C-3..C-6


# ---------------------------------------------------------------------- input bounds and storage (ADR-0133)
class PayloadTooLargeError(EnqueueError):
    """A payload's JSON text is larger than a dispatch message may carry; nothing was enqueued."""


class StorageFullError(TsumugiError):
    """A write failed because the database or the disk under it is full; the write changed nothing."""


# --------------------------------------------------------------------------- typed performers (ADR-0140)
class InvalidPerformerError(ConfigurationError, TypeError):
    """A ``performers`` entry is neither a ``Performer`` subclass nor a ``remote(...)`` marker."""


class InvalidPayloadError(EnqueueError):
    """A payload does not match its performer's payload type; nothing was enqueued.

    ``issues`` lists ``(field, problem)`` pairs, the field written like ``items[0].name``. Raised when
    a job is enqueued and, for a payload that reached the shard another way, when it is performed.
    """

    def __init__(self, message: str, issues: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.issues = issues


class ResultNotJsonError(TsumugiError, TypeError):
    """``perform`` returned a value that cannot be stored as JSON; the attempt fails with this error."""
