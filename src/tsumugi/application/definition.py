"""The validated ``define_tsumugi`` configuration; checked once, at definition."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypedDict, TypeVar, cast

from tsumugi.core.config import (
    BindingConfig,
    OnSettled,
    RunSettings,
    SweepOptions,
    binding_config_from,
)
from tsumugi.core.config_checks import from_mapping
from tsumugi.core.json_types import JsonObject
from tsumugi.core.options import OnEnqueue
from tsumugi.core.wire_format import validate_binding
from tsumugi.errors import (
    ConfigurationError,
    EnqueueError,
    InvalidConfigError,
    InvalidJobIdError,
    InvalidPerformerError,
    InvalidScheduleError,
)
from tsumugi.payloads import types_of
from tsumugi.performer import (
    Performer,
    describe_entry,
    is_remote,
    performer_defaults,
    performer_defaults_wire,
)

if TYPE_CHECKING:
    from tsumugi.api.options import AuthMiddleware
    from tsumugi.core.flow.model import Flow
    from tsumugi.core.schedules import ScheduleDef

__all__ = ["CONFIG_KEYS", "MetricsCredentials", "TsumugiDefinition", "TsumugiOptions", "parse_definition"]

CONFIG_KEYS: Final = (
    "performers",
    "bindings",
    "flows",
    "schedules",
    "runs",
    "auth",
    "ui",
    "retention",
    "metrics",
    "on_failure",
    "on_settled",
    "on_enqueue",
)
_REQUIRABLE_KEYS: Final = frozenset({"concurrency_key", "unique_key"})  # J-70
_SettingsT = TypeVar("_SettingsT", RunSettings, SweepOptions)

# ``metrics=``: ``env -> {"accountId", "apiToken", "dataset"}`` or None, the Analytics Engine credentials.
MetricsCredentials = Callable[[object], Mapping[str, object] | None]


class TsumugiOptions(TypedDict, total=False):
    """The keyword options of ``define_tsumugi``, for type checkers.

    ``parse_definition`` checks them again at run time (a dict of them gets no static check); ``auth``,
    ``ui`` and the two functions are kept as given, to be called later.
    """

    performers: Mapping[str, object]  # a Performer subclass, or what remote(...) returns
    bindings: Mapping[str, BindingConfig | Mapping[str, object]]
    flows: Mapping[str, Flow]
    schedules: Mapping[str, Mapping[str, object]]
    runs: RunSettings | Mapping[str, object]
    auth: AuthMiddleware | None
    ui: bool | Mapping[str, object]
    retention: SweepOptions | Mapping[str, object]
    metrics: MetricsCredentials | None
    on_failure: str | None
    on_settled: OnSettled | Mapping[str, object] | None
    on_enqueue: OnEnqueue | None


@dataclass(frozen=True)
class TsumugiDefinition:
    """Everything ``define_tsumugi`` was given, validated and converted to config values."""

    performers: Mapping[str, object]  # a Performer subclass, or what remote(...) returns
    bindings: Mapping[str, BindingConfig] = field(default_factory=dict)
    flows: Mapping[str, Flow] = field(default_factory=dict)
    schedules: tuple[ScheduleDef, ...] = ()
    runs: RunSettings = field(default_factory=RunSettings)
    auth: AuthMiddleware | None = None
    ui: object = True  # False turns the dashboard off; a mapping sets its options
    retention: SweepOptions = field(default_factory=SweepOptions)
    metrics: MetricsCredentials | None = None
    on_failure: str | None = None
    on_settled: OnSettled | None = None
    on_enqueue: OnEnqueue | None = None

    @property
    def performer_classes(self) -> dict[str, type[Performer]]:
        """Per binding, the Performer subclass it stands for (a ``remote()`` marker's class too)."""
        found: dict[str, type[Performer]] = {}
        for name, entry in self.performers.items():
            cls = _class_of(entry)
            if cls is not None:
                found[name] = cls
        return found

    @property
    def wire_defaults(self) -> dict[str, JsonObject]:
        """Per binding, the class-attribute job options in wire form, for node jobs and spawns (ADR-0141)."""
        found: dict[str, JsonObject] = {}
        for name, cls in self.performer_classes.items():
            wire = performer_defaults_wire(cls)  # valid: checked by parse_definition
            if wire:
                found[name] = wire
        return found

    @property
    def remote_bindings(self) -> tuple[str, ...]:
        """Bindings served by another Worker (a ``remote()`` marker)."""
        return tuple(name for name, entry in self.performers.items() if not isinstance(entry, type))

    @property
    def required_keys(self) -> dict[str, frozenset[str]]:
        """Per binding, the keys its performer class declares in ``requires``."""
        # J-70
        found: dict[str, frozenset[str]] = {}
        for name, entry in self.performers.items():
            required = _requires(entry)
            if required:
                found[name] = required
        return found

    @property
    def notice_settings(self) -> JsonObject:
        """The notice targets every enqueue carries to every shard."""
        # J-50, J-180
        settings: JsonObject = {}
        if self.on_failure is not None:
            settings["onFailure"] = self.on_failure
        if self.on_settled is not None:
            settings["onSettled"] = self.on_settled.to_wire()
        return settings


def parse_definition(config: Mapping[str, object]) -> TsumugiDefinition:
    """Validate a ``define_tsumugi`` configuration; raise ``ConfigurationError`` naming the problem."""
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigurationError(f"define_tsumugi: unknown option {unknown[0]!r}")
    performers = _performers(config.get("performers"))
    bindings = _bindings(config.get("bindings"), performers)
    on_failure = config.get("on_failure")
    if on_failure is not None:
        on_failure = _registered("on_failure", on_failure, performers)
    flows = _flows(config.get("flows"), performers)
    schedules = _schedules(config.get("schedules"), performers, bindings, flows)
    on_settled = _on_settled(config.get("on_settled"), performers)
    on_enqueue = config.get("on_enqueue")
    if on_enqueue is not None and not callable(on_enqueue):
        raise ConfigurationError("on_enqueue must be a function of the enqueue input")
    metrics = config.get("metrics")
    if metrics is not None and not callable(metrics):
        raise ConfigurationError("metrics must be a function of env")
    return TsumugiDefinition(
        performers=performers,
        bindings=bindings,
        flows=flows,
        schedules=schedules,
        runs=_value(RunSettings, "runs", config.get("runs")),
        # auth, metrics and on_enqueue are kept as given and called later (per request, per enqueue); only
        # the last two are checked to be callable. TsumugiOptions states their signatures to type checkers.
        auth=cast("AuthMiddleware | None", config.get("auth")),
        ui=config.get("ui", True),
        retention=_value(SweepOptions, "retention", config.get("retention")),
        metrics=cast("MetricsCredentials | None", metrics),
        on_failure=on_failure,
        on_settled=on_settled,
        on_enqueue=cast("OnEnqueue | None", on_enqueue),
    )


def _not_a_mapping(value: object) -> str:
    """What to write instead of a list (or any non-mapping) of performers, with its own classes."""
    classes = [entry for entry in value if isinstance(entry, type)] if isinstance(value, list | tuple) else []
    example = ", ".join(f'"{cls.__name__}": {cls.__name__}' for cls in classes) or '"SendMail": SendMail'
    return (
        "performers must be a mapping of binding name to performer class, "
        f"e.g. performers={{{example}}}; got a {type(value).__name__}"
    )


def _performers(value: object) -> dict[str, object]:
    if value is None:
        raise ConfigurationError("performers is required: a mapping of binding name to performer class")
    if not isinstance(value, Mapping):
        raise ConfigurationError(_not_a_mapping(value))
    performers: dict[str, object] = {}
    for name, entry in value.items():
        try:
            validate_binding(name)
        except InvalidJobIdError as error:
            raise ConfigurationError(f"performers: {error}") from None
        cls = _performer_class(name, entry)
        if cls is not None:
            _check_performer_class(name, cls)
        performers[name] = entry
    return performers


def _performer_class(name: str, entry: object) -> type[Performer] | None:
    """The class behind an entry; a function, an instance or another class is refused (ADR-0140)."""
    if is_remote(entry):
        return _class_of(entry)
    if isinstance(entry, type) and issubclass(entry, Performer):
        return entry
    what = f"is {describe_entry(entry)}"
    if isinstance(entry, type) and not callable(getattr(entry, "perform", None)):
        what = "has no perform method"
    raise InvalidPerformerError(
        f"performers: {name} {what}; give a subclass of tsumugi.Performer (the class itself, not an "
        "instance), or remote(...) for a performer served by another Worker"
    )


def _class_of(entry: object) -> type[Performer] | None:
    cls = entry if isinstance(entry, type) else getattr(entry, "performer", None)
    return cls if isinstance(cls, type) and issubclass(cls, Performer) else None


def _check_performer_class(name: str, cls: type[Performer]) -> None:
    required = frozenset(getattr(cls, "requires", frozenset()) or ())
    if not required <= _REQUIRABLE_KEYS:
        raise ConfigurationError(f"performers: {name}.requires may name only concurrency_key and unique_key")
    try:
        performer_defaults_wire(cls)  # ADR-0141: a bad class default fails now, not every enqueue
    except EnqueueError as error:
        raise InvalidConfigError(f"performers: {name}: {cls.__name__}'s class default {error}") from None
    try:
        types_of(cls)  # ADR-0140: an unsupported payload type fails now
    except ConfigurationError as error:
        raise type(error)(f"performers: {name}: {error}") from None
    if cls.perform is not Performer.perform and not inspect.iscoroutinefunction(cls.perform):
        warnings.warn(
            f"performers: {name}: {cls.__name__}.perform is not an async def: it blocks the event loop "
            "while it runs, and its timeout cannot interrupt it",
            RuntimeWarning,
            stacklevel=5,
        )


def _bindings(value: object, performers: Mapping[str, object]) -> dict[str, BindingConfig]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationError("bindings must be a mapping of binding name to BindingConfig")
    bindings: dict[str, BindingConfig] = {}
    for name, config in value.items():
        bindings[_registered("bindings", name, performers)] = binding_config_from(config)
    return bindings


def _flows(value: object, performers: Mapping[str, object]) -> dict[str, Flow]:
    """flow names, node bindings and subflow targets are checked now."""
    # F-6, F-12, F-17, J-204
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigurationError("flows must be a mapping of flow name to flow")
    flows: dict[str, Flow] = dict(value)  # each name and value is checked by validate_flows
    if flows:
        from tsumugi.core.flow.validation import validate_flows  # an app without flows never loads them

        validate_flows(flows, performers)
    return flows


def _schedules(
    value: object,
    performers: Mapping[str, object],
    bindings: Mapping[str, BindingConfig],
    flows: Mapping[str, Flow],
) -> tuple[ScheduleDef, ...]:
    """Every schedule definition is normalized now, in the original's check order, sorted by name."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise InvalidScheduleError("schedules must be a mapping of schedule name to definition")
    for name, spec in value.items():
        if not isinstance(spec, Mapping):
            raise InvalidScheduleError(f"schedule must be a mapping: {name}")
    shards_of = {name: (bindings[name].shards if name in bindings else 1) for name in performers}
    requires_of = {name: _requires(entry) for name, entry in performers.items()}
    specs = {name: _with_class_defaults(spec, performers) for name, spec in value.items()}
    from tsumugi.core.schedules import normalize_schedules  # an app without schedules never loads them

    return tuple(normalize_schedules(specs, shards_of=shards_of, requires_of=requires_of, flow_names=flows))


def _with_class_defaults(
    spec: Mapping[str, object], performers: Mapping[str, object]
) -> Mapping[str, object]:
    """A job schedule with its performer's class defaults under the options it sets (ADR-0141)."""
    binding = spec.get("binding")
    cls = _class_of(performers.get(binding)) if isinstance(binding, str) else None
    if cls is None:
        return spec
    defaults = {k: v for k, v in performer_defaults(cls).items() if spec.get(k) is None}
    return {**spec, **defaults} if defaults else spec


def _requires(entry: object) -> frozenset[str]:
    """The keys a performer class (or a ``remote()`` marker's class) declares required."""
    # J-70
    cls = entry if isinstance(entry, type) else getattr(entry, "performer", None)
    return frozenset(getattr(cls, "requires", frozenset()) or ())


def _on_settled(value: object, performers: Mapping[str, object]) -> OnSettled | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = OnSettled(**from_mapping("on_settled", value, ("binding", "states")))
    if not isinstance(value, OnSettled):
        raise ConfigurationError("on_settled must be OnSettled(binding, states) or a mapping")
    _registered("on_settled", value.binding, performers)
    return value


def _registered(option: str, binding: object, performers: Mapping[str, object]) -> str:
    """``binding`` when it names a registered performer (every such name is a string)."""
    if not isinstance(binding, str) or binding not in performers:
        raise ConfigurationError(f"{option}: unknown binding: {binding}")
    return binding


def _value(kind: type[_SettingsT], option: str, value: object) -> _SettingsT:
    if value is None:
        return kind()
    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        return kind(**from_mapping(option, value, kind.__dataclass_fields__))
    raise ConfigurationError(f"{option} must be {kind.__name__} or a mapping")
