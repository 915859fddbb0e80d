"""Telemetry off (the default) never loads OpenTelemetry, even where it is installed (ADR-0143)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.one_job import run_one_job_then

AFTER_ONE_JOB = """
    import tsumugi.telemetry
    assert not tsumugi.telemetry.enabled()
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry")
    assert not loaded, loaded
    """

WITHOUT_THE_PACKAGE = textwrap.dedent(
    """
    import sys
    sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
    import tsumugi.telemetry
    from tsumugi.errors import ConfigurationError
    try:
        tsumugi.telemetry.enable()
    except ConfigurationError as error:
        assert "pip install 'tsumugi[otel]'" in str(error), error
    else:
        raise AssertionError("enable() without opentelemetry-api must refuse")
    assert not tsumugi.telemetry.enabled()
    """
)


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_running_a_job_without_enable_imports_no_opentelemetry(tmp_path: Path) -> None:
    done = run_one_job_then(AFTER_ONE_JOB, tmp_path / "state")
    assert done.returncode == 0, done.stderr


def test_enable_without_opentelemetry_api_says_what_to_install() -> None:
    done = _python(WITHOUT_THE_PACKAGE)
    assert done.returncode == 0, done.stderr
