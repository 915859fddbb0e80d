"""Every code sample of the user guide (docs/guide/) and of the README's first job runs as written.

How a page's blocks are run, shared and checked is the convention in ``tests/docs/samples.py``: one fresh
directory per page, titled python blocks are files, untitled ones are scripts that must exit 0, shell
blocks are checked command by command, and ``<!-- sample: run|serve|worker -->`` mark the exceptions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from tests.docs import samples

PAGES = sorted(samples.GUIDE.glob("*.md"))
README = samples.REPO / "README.md"
README_SECTIONS = ("Install", "A first job")  # the README's parts a new user runs, in this order


def test_the_guide_has_pages() -> None:
    assert len(PAGES) >= 12


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_every_sample_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    samples.run_page(page, tmp_path)


def readme_first_job() -> str:
    """The README with every line outside ``README_SECTIONS`` blanked (so line numbers stay true)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    kept: list[str] = []
    keep = False
    for line in lines:
        if line.startswith("## "):
            keep = line[3:].strip() in README_SECTIONS
        kept.append(line if keep else "")
    return "\n".join(kept) + "\n"


def test_the_readme_first_job_runs_as_written(tmp_path: Path) -> None:
    text = readme_first_job()
    found = samples.blocks_of(README, text)
    assert any(block.title == "app.py" for block in found), "the first job defines app.py"
    assert any(block.directive == "serve" for block in found), "the first job starts tsumugi dev"
    samples.run_page(README, tmp_path, text=text)


def test_every_shell_command_of_the_readme_exists() -> None:
    for block in samples.blocks_of(README):
        if block.lang in samples.SHELL:
            samples.check_shell(block, block.text)


def test_the_readme_links_the_guide() -> None:
    text = README.read_text(encoding="utf-8")
    assert "docs/guide/" in text and "mkdocs serve" in text


def _nav_files(items: object) -> list[str]:
    if isinstance(items, str):
        return [items]
    if isinstance(items, list):
        return [name for item in items for name in _nav_files(item)]
    if isinstance(items, dict):
        return [name for value in items.values() for name in _nav_files(value)]
    return []


def test_every_guide_page_is_in_the_nav() -> None:
    config = yaml.safe_load((samples.REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_nav_files(config["nav"]))
    for page in PAGES:
        assert f"guide/{page.name}" in nav, f"{page.name} is not in mkdocs.yml's nav"
    assert "guide/testing-with-chaos.md" in nav  # written by another page's author; listed from the start


# ------------------------------------------------------------------------- the convention's own checks
def test_blocks_are_found_with_their_titles_directives_and_indentation(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        '```python title="app.py"\nx = 1\n```\n\n<!-- sample: serve -->\n```sh\ntsumugi dev app.py\n```\n'
        '!!! note\n    ```python\n    print("in a note")\n    ```\n',
        encoding="utf-8",
    )
    found = samples.blocks_of(page)
    assert [(b.lang, b.title, b.directive, b.line) for b in found] == [
        ("python", "app.py", None, 1),
        ("sh", None, "serve", 6),
        ("python", None, None, 10),
    ]
    assert found[2].text == 'print("in a note")\n'


def test_commands_are_split_as_the_shell_would() -> None:
    text = "TSUMUGI_TOKEN=t tsumugi dev app.py --port 8787 &\ncurl -s http://x/api/stats | jq . # note\n"
    assert list(samples.commands_of(text)) == [
        ["tsumugi", "dev", "app.py", "--port", "8787"],
        ["curl", "-s", "http://x/api/stats"],
        ["jq", "."],
    ]


@pytest.mark.parametrize(
    "command",
    [
        "tsumugi serve app.py",
        "tsumugi dev app.py --no-such-option",
        "scripts/no-such-script",
        "npx wrangler frobnicate",
        "curl -X DELETE http://127.0.0.1:8787/api/jobs",
        "curl http://127.0.0.1:8787/api/nothing-here",
        "make everything",
    ],
)
def test_a_command_that_does_not_exist_is_refused(command: str) -> None:
    (argv,) = samples.commands_of(command)
    with pytest.raises(AssertionError):
        samples.check_command(argv)


def test_a_failing_script_names_its_page_and_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("intro\n\n```python\nassert 1 == 2, 'the claim'\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=re.escape("page.md:3") + r"(.|\n)*the claim"):
        samples.run_page(page, tmp_path / "run", text=None)


def test_an_unknown_language_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```ruby\nputs 1\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="no rule"):
        samples.run_page(page, tmp_path)
