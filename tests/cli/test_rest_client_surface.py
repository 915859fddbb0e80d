"""The REST client the operator commands use names its public surface (issue 14: it had no ``__all__``)."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import BaseModel

from tsumugi import rest_answers, rest_client, rest_requests
from tsumugi.api import models
from tsumugi.rest_client import TsumugiClient


def test_rest_client_all_is_the_clients_their_error_and_the_default_timeout() -> None:
    assert rest_client.__all__ == ["DEFAULT_TIMEOUT_S", "AsyncTsumugiClient", "RestApiError", "TsumugiClient"]
    assert all(hasattr(rest_client, name) for name in rest_client.__all__)


# The dict answers are typed dicts; each keeps the fields of the pydantic model the OpenAPI document shows.
ANSWER_MODELS = [
    (rest_answers.MutationDone, models.Mutation),
    (rest_answers.EventAccepted, models.EventAccepted),
    (rest_answers.EventRefused, models.EventRefused),
    (rest_answers.BulkCount, models.BulkCount),
    (rest_answers.BulkProgress, models.BulkProgress),
    (rest_requests.ThrottleSpec, models.ThrottleRequest),
]


@pytest.mark.parametrize(("answer", "model"), ANSWER_MODELS)
def test_each_typed_answer_has_the_fields_of_its_wire_model(answer: type, model: type[BaseModel]) -> None:
    assert list(answer.__annotations__) == list(model.model_fields)


Answers = dict[tuple[str, str], httpx.Response]


def _recording(answers: Answers) -> tuple[list[httpx.Request], httpx.MockTransport]:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[(request.method, request.url.path)]

    return seen, httpx.MockTransport(handle)


def test_mutation_refusals_are_values_and_bulk_dry_runs_count() -> None:
    # J-131: 409 and 410 are answers, not errors
    seen, transport = _recording(
        {
            ("POST", "/api/jobs/A#0:x/retry"): httpx.Response(410, json={"error": "gone"}),
            ("POST", "/api/jobs/A#0:x/cancel"): httpx.Response(200, json={"ok": True, "requested": True}),
            ("POST", "/api/runs/f:r/retry"): httpx.Response(409, json={"error": "no"}),
            ("POST", "/api/bulk"): httpx.Response(200, json={"matched": 3}),
            ("GET", "/api/jobs"): httpx.Response(200, json={"jobs": [], "total": 0}),
        }
    )
    with TsumugiClient("http://tsumugi.test", "t", transport=transport) as api:
        assert api.retry_job("A#0:x") == {"ok": False, "reason": "gone"}
        assert api.cancel_job("A#0:x") == {"ok": True, "requested": True}
        assert api.retry_run("f:r") == {"ok": False, "reason": "invalid-state"}
        assert api.start_bulk(action="retry", filter={"binding": "A"}, dryRun=True)["matched"] == 3
        assert api.list_jobs(state="FAILED", binding=None, limit=5).total == 0
    assert json.loads(seen[3].content) == {"action": "retry", "filter": {"binding": "A"}, "dryRun": True}
    assert dict(seen[4].url.params) == {"state": "FAILED", "limit": "5"}
