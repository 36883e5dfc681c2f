"""The documentation runs: every Python block of every page, and the README's shape."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(python|py)\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)


def blocks() -> list:
    out = []
    for page in sorted(DOCS.glob("*.md")):
        for n, m in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            out.append(pytest.param(m.group(1), m.group(2), id=f"{page.stem}-{n}"))
    return out


@pytest.mark.model
@pytest.mark.parametrize(("fence", "code"), blocks())
def test_every_python_block_of_the_docs_runs(fence, code, monkeypatch):
    if fence == "py":
        # blocks fenced ```py show a deployment (a server, a cluster) they connect to by
        # themselves; their first line says what; the calls are tested where it runs
        need = code.splitlines()[0].lstrip("# ").strip()
        pytest.skip(f"a deployment snippet the docs test does not run ({need})")
    monkeypatch.chdir(ROOT)
    exec(compile(code, "docs", "exec"), {})


def test_blocks_that_are_not_run_say_why():
    for page in DOCS.glob("*.md"):
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            if m.group(1) == "py":
                assert m.group(2).startswith("# needs "), (page.name, m.group(2)[:60])


def test_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#\s]+)\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_every_docs_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        assert f" {page.name}" in nav, page.name


def test_the_version_is_one_number_everywhere_and_has_its_changelog_section():
    import tomllib

    import semrag

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
    assert semrag.__version__ == version  # the installed metadata (`pip install -e .`)
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    section = re.search(
        rf"^## \[{re.escape(version)}\] - \d{{4}}-\d\d-\d\d\n(.*?)(?=^## |\Z)",
        changelog,
        flags=re.M | re.S,
    )
    assert section, f"CHANGELOG.md has no section for {version}"
    kinds = re.findall(r"^### (\w+)", section.group(1), flags=re.M)
    assert kinds and set(kinds) <= {
        "Added",
        "Changed",
        "Deprecated",
        "Removed",
        "Fixed",
        "Security",
    }
    assert len(kinds) == len(set(kinds)), "one section per kind of change"
