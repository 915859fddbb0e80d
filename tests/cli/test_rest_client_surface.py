"""The REST client the operator commands use names its public surface (issue 14: it had no ``__all__``)."""

from __future__ import annotations

from tsumugi import rest_client


def test_rest_client_all_is_the_clients_their_error_and_the_default_timeout() -> None:
    assert rest_client.__all__ == ["DEFAULT_TIMEOUT_S", "AsyncTsumugiClient", "RestApiError", "TsumugiClient"]
    assert all(hasattr(rest_client, name) for name in rest_client.__all__)
