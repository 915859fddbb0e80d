"""What an app's definition configures, as the REST layer and the runtimes read it from the app."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tsumugi.application.definition import MetricsCredentials, TsumugiDefinition
from tsumugi.core.config import BindingConfig, OnSettled, RunSettings, SweepOptions
from tsumugi.core.options import OnEnqueue

if TYPE_CHECKING:
    from tsumugi.api.options import AuthMiddleware
    from tsumugi.core.flow.model import Flow
    from tsumugi.core.schedules import ScheduleDef

__all__ = ["AppSettings"]


class AppSettings:
    """Read-only views of one ``TsumugiDefinition``; ``Tsumugi`` builds on them."""

    def __init__(self, definition: TsumugiDefinition) -> None:
        self.definition = definition

    @property
    def binding_configs(self) -> Mapping[str, BindingConfig]:
        return self.definition.bindings

    @property
    def performers(self) -> Mapping[str, object]:
        """Binding name -> the Performer subclass, or the ``remote(...)`` marker, it was given."""
        return self.definition.performers

    @property
    def flows(self) -> Mapping[str, Flow]:
        """Registered flows by name, validated at definition."""
        # J-204
        return self.definition.flows

    @property
    def schedules(self) -> tuple[ScheduleDef, ...]:
        """Normalized schedules, sorted by name."""
        # S-2, S-5
        return self.definition.schedules

    @property
    def runs(self) -> RunSettings:
        return self.definition.runs

    @property
    def auth(self) -> AuthMiddleware | None:
        return self.definition.auth

    @property
    def ui(self) -> object:
        """As given: False turns the dashboard off, a mapping sets its options."""
        return self.definition.ui

    @property
    def retention(self) -> SweepOptions:
        return self.definition.retention

    @property
    def metrics(self) -> MetricsCredentials | None:
        return self.definition.metrics

    @property
    def on_failure(self) -> str | None:
        return self.definition.on_failure

    @property
    def on_settled(self) -> OnSettled | None:
        return self.definition.on_settled

    @property
    def on_enqueue(self) -> OnEnqueue | None:
        return self.definition.on_enqueue
