"""One request as the route handlers see it: the Starlette request, its env, the options and path params."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from tsumugi.api.options import RestOptions
from tsumugi.ports import ShardNamespace, SqlDatabase


@dataclass(frozen=True)
class RequestContext:
    request: Request
    env: object  # what the runtime handed the request; see tsumugi.api.options
    options: RestOptions
    params: dict[str, str]

    @property
    def db(self) -> SqlDatabase:
        return self.options.database(self.env)

    @property
    def shards(self) -> ShardNamespace:
        return self.options.shards(self.env)

    def now_ms(self) -> int:
        return self.options.clock.now()

    def query(self, name: str) -> str | None:
        """The first value of a repeated query parameter, as ``URLSearchParams.get`` answers."""
        values = self.request.query_params.getlist(name)
        return values[0] if values else None
