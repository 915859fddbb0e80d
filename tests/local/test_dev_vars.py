"""`.dev.vars` parsing and where `tsumugi dev` takes the token from."""

from __future__ import annotations

from pathlib import Path

from tsumugi.runtimes.local.dev_vars import load_vars, parse_dev_vars


def test_dev_vars_lines_are_parsed_like_wrangler_reads_them() -> None:
    text = "# comment\nTSUMUGI_TOKEN=\"dev-token\"\n\nexport OTHER = plain\nQUOTED='single'\nnot a pair\n"
    assert parse_dev_vars(text) == {"TSUMUGI_TOKEN": "dev-token", "OTHER": "plain", "QUOTED": "single"}


def test_the_environment_token_wins_over_the_file(tmp_path: Path) -> None:
    (tmp_path / ".dev.vars").write_text("TSUMUGI_TOKEN=from-file\nEXTRA=1\n", encoding="utf-8")
    assert load_vars(tmp_path, {}) == {"TSUMUGI_TOKEN": "from-file", "EXTRA": "1"}
    assert load_vars(tmp_path, {"TSUMUGI_TOKEN": "from-env"})["TSUMUGI_TOKEN"] == "from-env"
    assert load_vars(tmp_path / "elsewhere", {}) == {}
